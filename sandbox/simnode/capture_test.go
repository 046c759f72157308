package simnode

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

func TestCaptureOutputsReadsParametersWhereArgoexecDoes(t *testing.T) {
	param := func(name string, from wfv1.ValueFrom) wfv1.Parameter {
		return wfv1.Parameter{Name: name, ValueFrom: &from}
	}
	resource := &wfv1.ResourceTemplate{Action: "create", Manifest: "kind: ConfigMap"}
	container := &corev1.Container{Image: "alpine"}
	tests := []struct {
		name     string
		tmpl     wfv1.Template
		given    map[string]string
		want     map[string]string // parameter → value ("<none>" for no value)
		wantsErr bool
	}{
		{"a resource template's jsonPath and jqFilter parameters take the script's values",
			wfv1.Template{Resource: resource, Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
				param("name", wfv1.ValueFrom{JSONPath: "{.metadata.name}"}), param("obj", wfv1.ValueFrom{JQFilter: "."})}}},
			map[string]string{"name": "n", "obj": "{}"}, map[string]string{"name": "n", "obj": "{}"}, false},
		{"a resource template's jsonPath parameter without a value takes its default",
			wfv1.Template{Resource: resource, Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
				param("name", wfv1.ValueFrom{JSONPath: "{.metadata.name}", Default: wfv1.AnyStringPtr("d")})}}},
			nil, map[string]string{"name": "d"}, false},
		{"a resource template's jsonPath parameter without a value nor default fails the executor",
			wfv1.Template{Resource: resource, Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
				param("name", wfv1.ValueFrom{JSONPath: "{.metadata.name}"})}}},
			nil, map[string]string{"name": "<none>"}, true},
		{"a container template's jsonPath parameter is not captured, as argoexec's wait does not read it",
			wfv1.Template{Container: container, Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
				param("name", wfv1.ValueFrom{JSONPath: "{.metadata.name}"})}}},
			map[string]string{"name": "n"}, map[string]string{"name": "<none>"}, false},
		{"a container template's file parameter takes the script's value",
			wfv1.Template{Container: container, Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{
				param("out", wfv1.ValueFrom{Path: "/tmp/out"})}}},
			map[string]string{"out": "v"}, map[string]string{"out": "v"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &executor{info: PodInfo{Template: &tt.tmpl}, b: Behavior{Parameters: tt.given}}
			outputs, err := e.captureOutputs()
			if (err != nil) != tt.wantsErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantsErr)
			}
			for _, p := range outputs.Parameters {
				got := "<none>"
				if p.Value != nil {
					got = p.Value.String()
				}
				if got != tt.want[p.Name] {
					t.Errorf("parameter %s = %q, want %q", p.Name, got, tt.want[p.Name])
				}
			}
		})
	}
}

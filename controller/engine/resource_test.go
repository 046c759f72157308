package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
)

// resourceChain is chain with a producer that creates a ConfigMap and reads its name back.
var resourceChain = strings.Replace(chain, `    container: {image: alpine, command: [sh, -c, "echo v > /tmp/out"]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}`, `    resource:
      action: create
      setOwnerReference: true
      manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: cm-}\n"
    outputs: {parameters: [{name: out, valueFrom: {jsonPath: "{.metadata.name}"}}]}`, 1)

func TestAResourceTemplateRunsAsAPodNodeBehindTheResultGate(t *testing.T) {
	out := &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("cm-x")}}}
	readsResult := strings.Replace(resourceChain, "{{steps.a.outputs.parameters.out}}", "{{steps.a.outputs.parameters.out}}{{steps.a.outputs.result}}", 1)
	for _, tc := range []struct {
		sentence string
		manifest string
		outputs  *wfv1.Outputs
		wantA    wfv1.NodePhase
		wantAMsg string
		wantBRun bool
	}{
		{"a resource node whose result carries its jsonPath output succeeds and b runs with the value",
			resourceChain, out, wfv1.NodeSucceeded, "", true},
		{"a resource node whose finalized result lacks its jsonPath output errors and b never starts",
			resourceChain, &wfv1.Outputs{}, wfv1.NodeError, "required outputs are not set", false},
		{"a resource pod's stdout is not captured even when the next step reads its outputs.result, so that step is refused",
			readsResult, out, wfv1.NodeSucceeded, "", false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if !strings.Contains(tc.manifest, "resource:") {
				t.Fatal("the resource producer did not replace chain's container producer")
			}
			wf, pods, _ := runChain(t, tc.manifest, tc.outputs)
			a, b := p0(wf, "chain[0].a"), p0(wf, "chain[1].b")
			if a == nil || a.Type != wfv1.NodeTypePod || a.Phase != tc.wantA || !strings.Contains(a.Message, tc.wantAMsg) {
				t.Fatalf("a = %+v, want a Pod node %s with message containing %q", a, tc.wantA, tc.wantAMsg)
			}
			pod := pods.created[a.ID]
			if pod == nil || len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != common.MainContainerName {
				t.Fatalf("a's pod = %+v, want only a main container", pod)
			}
			if cmd := strings.Join(pod.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "-- argoexec resource create") {
				t.Errorf("a's main runs %q, want argoexec resource create", cmd)
			}
			for _, env := range pod.Spec.Containers[0].Env {
				if env.Name == common.EnvVarIncludeScriptOutput && env.Value != "false" {
					t.Errorf("a's pod asks for script output (%s=%s); a resource has none", env.Name, env.Value)
				}
			}
			if started := b != nil && pods.created[b.ID] != nil; started != tc.wantBRun {
				t.Fatalf("b = %+v, want its pod started: %v", b, tc.wantBRun)
			}
			if tc.wantBRun && !strings.Contains(strings.Join(pods.created[b.ID].Spec.Containers[1].Command, " "), "cm-x") {
				t.Errorf("b's pod runs %v, want it to run with cm-x", pods.created[b.ID].Spec.Containers[1].Command)
			}
		})
	}
}

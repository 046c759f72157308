package engine

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// A parameter read from a ConfigMap must get the ConfigMap's value, its default, or a clear error: never a
// pod started with the {{…}} placeholder in its arguments (argo's arguments-parameters-from-configmap and
// global-parameters-from-configmap examples).
func TestParametersFromAConfigMapGetItsValueOrFailLoudly(t *testing.T) {
	labelled := map[string]string{common.LabelKeyConfigMapType: common.LabelValueTypeConfigMapParameter}
	for _, tc := range []struct {
		sentence  string
		param     string // the parameter declaration, as inputs (input: true) or spec.arguments
		input     bool
		configMap *corev1.ConfigMap
		noStore   bool
		wantArg   string // main's last argument; "" when no pod may be created
		wantError string // the node's (input) or workflow's (global) message
	}{
		{"an input parameter takes the value of a labelled ConfigMap", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: msg}}}`, true,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "simple", Namespace: "ns", Labels: labelled}, Data: map[string]string{"msg": "hello world"}}, false,
			"hello world", ""},
		{"an input parameter refuses a ConfigMap without argo's label", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: msg}}}`, true,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "simple", Namespace: "ns"}, Data: map[string]string{"msg": "hello world"}}, false,
			"", "needs to have the label workflows.argoproj.io/configmap-type: Parameter"},
		{"an input parameter whose ConfigMap is missing takes its default", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: msg}, default: fallback}}`, true,
			nil, false, "fallback", ""},
		{"an input parameter whose ConfigMap is missing and has no default errors its node", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: msg}}}`, true,
			nil, false, "", "unable to retrieve inputs.parameters.message from ConfigMap"},
		{"an engine given no ConfigMap store errors the node instead of keeping the placeholder", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: msg}}}`, true,
			nil, true, "", "unable to retrieve inputs.parameters.message from ConfigMap"},
		{"a workflow parameter takes the value of a labelled ConfigMap", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: msg}}}`, false,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "simple", Namespace: "ns", Labels: labelled}, Data: map[string]string{"msg": "hello world"}}, false,
			"hello world", ""},
		{"a workflow parameter whose ConfigMap lacks the key fails the workflow at its start", `{name: message, valueFrom: {configMapKeyRef: {name: simple, key: nokey}}}`, false,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "simple", Namespace: "ns", Labels: labelled}, Data: map[string]string{"msg": "hello world"}}, false,
			"", "failed to set global parameters: failed to set global parameter message from configmap with name simple and key nokey"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			spec := `
metadata: {name: cm, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  templates:
  - name: main
    inputs: {parameters: [` + tc.param + `]}
    container: {image: alpine, command: [echo], args: ["{{inputs.parameters.message}}"]}
`
			if !tc.input {
				spec = `
metadata: {name: cm, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  arguments: {parameters: [` + tc.param + `]}
  templates:
  - name: main
    container: {image: alpine, command: [echo], args: ["{{workflow.parameters.message}}"]}
`
			}
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte(spec), wf); err != nil {
				t.Fatal(err)
			}
			store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tc.configMap != nil {
				if err := store.Add(tc.configMap); err != nil {
					t.Fatal(err)
				}
			}
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			e := &Engine{Pods: pods}
			if !tc.noStore {
				e.ParameterConfigMaps = store
			}
			runPass(t, e, wf, time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
			pod := pods.created[wf.NodeID("cm")]
			if tc.wantArg == "" {
				if pod != nil {
					t.Fatalf("a pod was created with arguments %q", findMain(pod).Args)
				}
				msg := wf.Status.Message
				if tc.input {
					msg = wf.Status.Nodes[wf.NodeID("cm")].Message
				}
				if !strings.Contains(msg, tc.wantError) {
					t.Fatalf("message %q, want one containing %q", msg, tc.wantError)
				}
				return
			}
			if pod == nil {
				t.Fatalf("no pod created; workflow %s %q, nodes %v", wf.Status.Phase, wf.Status.Message, wf.Status.Nodes)
			}
			if args := findMain(pod).Args; args[len(args)-1] != tc.wantArg {
				t.Fatalf("main's arguments %q, want the last to be %q", args, tc.wantArg)
			}
		})
	}
}

package engine

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestRetriesWithNodeAntiAffinityAvoidTheHostsWhereEarlierAttemptsFailed(t *testing.T) {
	const head = "metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}\nspec:\n  entrypoint: main\n  templates:\n"
	avoidNode1 := []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-1"}}}
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	for _, tc := range []struct {
		sentence string
		spec     string
		// want is each pod's required node selector terms' expressions by node name; nil: no affinity.
		want map[string][]corev1.NodeSelectorRequirement
	}{
		{"the first attempt runs anywhere, each retry avoids the failed attempts' host",
			head + "  - {name: main, retryStrategy: {limit: 2, affinity: {nodeAntiAffinity: {}}}, container: {image: alpine, command: [false]}}",
			map[string][]corev1.NodeSelectorRequirement{"wf(0)": nil, "wf(1)": avoidNode1, "wf(2)": avoidNode1}},
		{"the hosts are added to the template's own required node affinity, in its first term",
			head + `  - name: main
    retryStrategy: {limit: 1, affinity: {nodeAntiAffinity: {}}}
    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
    container: {image: alpine, command: [false]}`,
			map[string][]corev1.NodeSelectorRequirement{"wf(0)": {zone}, "wf(1)": {zone, avoidNode1[0]}}},
		{"a retried steps template's pods avoid the hosts too, as argo looks through the attempt's boundary",
			head + `  - {name: main, retryStrategy: {limit: 1, affinity: {nodeAntiAffinity: {}}}, steps: [[{name: a, template: fail}]]}
  - {name: fail, container: {image: alpine, command: [false]}}`,
			map[string][]corev1.NodeSelectorRequirement{"wf(0)[0].a": nil, "wf(1)[0].a": avoidNode1}},
		{"without nodeAntiAffinity a retry may run on the same host",
			head + "  - {name: main, retryStrategy: {limit: 1}, container: {image: alpine, command: [false]}}",
			map[string][]corev1.NodeSelectorRequirement{"wf(0)": nil, "wf(1)": nil}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, pods := runToEnd(t, &Engine{}, tc.spec, corev1.PodFailed)
			if wf.Status.Phase != wfv1.WorkflowFailed {
				t.Fatalf("workflow %s (%s), want Failed after the last attempt", wf.Status.Phase, wf.Status.Message)
			}
			if len(pods.created) != len(tc.want) {
				t.Fatalf("%d pods created, want %d", len(pods.created), len(tc.want))
			}
			for name, want := range tc.want {
				pod := pods.created[wf.NodeID(name)]
				if pod == nil {
					t.Fatalf("no pod for %s", name)
				}
				if got := requiredExpressions(pod); !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("pod of %s requires %v, want %v", name, got, want)
				}
			}
		})
	}
}

func requiredExpressions(pod *corev1.Pod) []corev1.NodeSelectorRequirement {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var out []corev1.NodeSelectorRequirement
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		out = append(out, term.MatchExpressions...)
	}
	return out
}

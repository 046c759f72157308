package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// memoPipeline builds with a memoized step and hands its output to the next one.
const memoPipeline = `
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: build, template: build}
    - - {name: deploy, template: deploy, arguments: {parameters: [{name: artifact, value: "{{steps.build.outputs.parameters.artifact}}"}]}}
  - name: build
    memoize: {key: build-key, cache: {configMap: {name: build-cache}}}
    container: {image: alpine, command: [sh, -c, "echo real > /tmp/artifact"]}
    outputs: {parameters: [{name: artifact, valueFrom: {path: /tmp/artifact}}]}
  - name: deploy
    inputs: {parameters: [{name: artifact}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.artifact}}"]}
`

// Issue #44 item 11(d): whoever may write ConfigMaps in a namespace may write a workflow's memoization
// cache, and an entry there decides the memoized node's outputs without the node running. argo counts every
// entry, and so does wfguard by default; --memoize-trust=sealed counts only the entries the controller
// saved (sealed with its record key).
func TestAMemoizationEntryAnotherUserForgedDecidesOnlyWhenEveryEntryIsTrusted(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		trust    memoize.Trust
		// seal is the wfguardSeal the forger writes ("" for none: mallory cannot read a real one).
		seal string
		// wantDeploy is what the successor deploys; wantIgnored the reason the forged entry is reported with.
		wantDeploy, wantIgnored string
	}{
		{"under sealed an unsealed forged entry is a miss: build runs, deploy gets the real output, the entry is reported",
			memoize.TrustSealed, "", "real", memoize.IgnoredUnsealed},
		{"under sealed a forged entry with a made-up seal is a miss too", memoize.TrustSealed, "bWFkZS11cA", "real", memoize.IgnoredInvalidSeal},
		{"under any, argo's behaviour, the forged output is deployed without build running: what sealed is for",
			memoize.TrustAny, "", "FORGED", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := newEnv(t, envOptions{memoizeTrust: tc.trust, script: simnode.Script{ByTemplate: map[string]simnode.Behavior{
				"build": {Parameters: map[string]string{"artifact": "real"}}}}})
			mallory := kubernetes.NewForConfigOrDie(e.Grant(cp.Config(), "mallory",
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "update"}}))
			forgeCacheEntry(t, mallory, e.Namespace, tc.seal)

			wf := e.Submit(fmt.Sprintf(memoPipeline, "pipeline"))
			done := e.WaitCompleted(wf.Name)
			build := e.Node(done, "pipeline[0].build")
			if done.Status.Phase != wfv1.WorkflowSucceeded || build.MemoizationStatus == nil || build.MemoizationStatus.Hit != (tc.wantIgnored == "") {
				t.Fatalf("workflow %s, build's memoization %+v; want Succeeded, a hit only under any\n%s", done.Status.Phase, build.MemoizationStatus, harness.Describe(done))
			}
			if args := strings.Join(mainArgs(e.PodOf(done, "pipeline[1].deploy")), " "); !strings.Contains(args, tc.wantDeploy) {
				t.Fatalf("deploy ran %q, want it to deploy %s", args, tc.wantDeploy)
			}
			pods, err := e.Kube.CoreV1().Pods(e.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + wf.Name})
			if wantPods := map[bool]int{true: 1, false: 2}[tc.wantIgnored == ""]; err != nil || len(pods.Items) != wantPods {
				t.Fatalf("the workflow ran %d pods (%v), want %d", len(pods.Items), err, wantPods)
			}
			ignored := e.Metric("wfguard_memoization_entries_ignored_total", nil)
			if tc.wantIgnored == "" {
				if events := e.Events("", wf.Name, engine.ReasonMemoEntryIgnored); len(events) != 0 || ignored != 0 {
					t.Fatalf("under any the entry was reported: %d events, metric %v", len(events), ignored)
				}
				return
			}
			events := e.WaitEvent("", wf.Name, engine.ReasonMemoEntryIgnored)
			if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, "build-key") ||
				e.Metric("wfguard_memoization_entries_ignored_total", map[string]string{"reason": tc.wantIgnored}) != 1 || ignored != 1 {
				t.Fatalf("events %+v, metric %v; want one Warning naming the entry and the metric 1 for %s", events, ignored, tc.wantIgnored)
			}
			// What build saved is sealed: the next workflow with the key is served it without running build.
			next := e.WaitCompleted(e.Submit(fmt.Sprintf(memoPipeline, "next")).Name)
			if hit := e.Node(next, "next[0].build").MemoizationStatus; next.Status.Phase != wfv1.WorkflowSucceeded || hit == nil || !hit.Hit ||
				!strings.Contains(strings.Join(mainArgs(e.PodOf(next, "next[1].deploy")), " "), "real") {
				t.Fatalf("the next workflow was not served the sealed real output\n%s", harness.Describe(next))
			}
		})
	}
}

// forgeCacheEntry is mallory, who may only create and update ConfigMaps, writing into the pipeline's cache
// before it runs an entry whose output is FORGED, in argo's format, with seal as its wfguardSeal.
func forgeCacheEntry(t *testing.T, mallory kubernetes.Interface, namespace, seal string) {
	t.Helper()
	entry := map[string]any{"nodeID": "pipeline-forged", "creationTimestamp": time.Now().UTC().Format(time.RFC3339), "lastHitTimestamp": nil,
		"outputs": map[string]any{"parameters": []any{map[string]any{"name": "artifact", "value": "FORGED"}}}}
	if seal != "" {
		entry["wfguardSeal"] = seal
	}
	data, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "build-cache",
		Labels: map[string]string{common.LabelKeyConfigMapType: common.LabelValueTypeConfigMapCache}}}
	created, err := mallory.CoreV1().ConfigMaps(namespace).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("mallory creating the cache: %v", err)
	}
	created.Data = map[string]string{"build-key": string(data)}
	if _, err := mallory.CoreV1().ConfigMaps(namespace).Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("mallory writing the forged entry: %v", err)
	}
}

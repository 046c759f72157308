package taskresult

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/controller/podspec"
)

func workflow() *wfv1.Workflow {
	f := false
	return &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf", UID: "uid-1"},
		Status: wfv1.WorkflowStatus{Nodes: wfv1.Nodes{
			"wf-1": {ID: "wf-1", Name: "wf.a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeRunning, TaskResultSynced: &f,
				Outputs: &wfv1.Outputs{ExitCode: ptr("0")}},
			"wf-2": {ID: "wf-2", Name: "wf.approve", Type: wfv1.NodeTypeSuspend, Phase: wfv1.NodeSucceeded,
				Outputs: &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "answer", Value: wfv1.AnyStringPtr("no")}}}},
			"wf-3": {ID: "wf-3", Name: "wf.b", Type: wfv1.NodeTypePod, Phase: wfv1.NodePending, TaskResultSynced: &f},
		}},
	}
}

func ptr(s string) *string { return &s }

var podCreated = metav1.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)

// podOf is the pod the controller creates for node wf-1 (podidentity's rule).
func podOf() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "wf-main-" + fnv32a("wf.a"), UID: "pod-uid-1", CreationTimestamp: podCreated,
		Labels:          map[string]string{common.LabelKeyWorkflow: "wf"},
		Annotations:     map[string]string{common.AnnotationKeyNodeID: "wf-1"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "wf", UID: "uid-1"}},
	}}
}

func fnv32a(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprint(h.Sum32())
}

func result(name, owner, label string, outputs *wfv1.Outputs) *wfv1.WorkflowTaskResult {
	return &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(podCreated.Add(time.Second)),
			Labels:          map[string]string{common.LabelKeyReportOutputsCompleted: label, common.LabelKeyWorkflow: "wf"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", UID: types.UID("uid-" + owner)}}},
		NodeResult: wfv1.NodeResult{Outputs: outputs},
	}
}

func TestMergeTakesOutputsAndOpensTheGateOnlyForResultsOfItsOwnPods(t *testing.T) {
	out := &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("v")}}}
	edit := func(r *wfv1.WorkflowTaskResult, f func(*wfv1.WorkflowTaskResult)) *wfv1.WorkflowTaskResult {
		f(r)
		return r
	}
	cases := []struct {
		name       string
		result     *wfv1.WorkflowTaskResult
		pod        func(*corev1.Pod)
		wantSynced bool
		wantParam  bool
		ignored    string
		pending    int
	}{
		{"a placeholder keeps the gate closed", result("wf-1", "1", "false", nil), nil, false, false, "", 0},
		{"outputs without the completed label merge but keep it closed", result("wf-1", "1", "false", out), nil, false, true, "", 0},
		{"a complete result of the node's own pod opens it", result("wf-1", "1", "true", out), nil, true, true, "", 0},
		{"another workflow UID's result is ignored", result("wf-1", "2", "true", out), nil, false, false, IgnoredForeign, 0},
		{"a result labelled for another workflow is ignored", edit(result("wf-1", "1", "true", out), func(r *wfv1.WorkflowTaskResult) {
			r.Labels[common.LabelKeyWorkflow] = "other"
		}), nil, false, false, IgnoredForeign, 0},
		{"a result in another namespace is ignored", edit(result("wf-1", "1", "true", out), func(r *wfv1.WorkflowTaskResult) {
			r.Namespace = "b"
		}), nil, false, false, IgnoredForeign, 0},
		{"a result for no node is ignored", result("wf-9", "1", "true", out), nil, false, false, IgnoredUnknownNode, 0},
		{"a result for a node whose pod is not there is ignored", result("wf-1", "1", "true", out), func(p *corev1.Pod) { p.Name = "" },
			false, false, IgnoredNoMatchingPod, 0},
		{"a result whose pod is not the one the controller created is ignored", result("wf-1", "1", "true", out),
			func(p *corev1.Pod) { p.Name = "wf-evil-1" }, false, false, IgnoredNoMatchingPod, 0},
		{"a result created before the node's pod is ignored", edit(result("wf-1", "1", "true", out), func(r *wfv1.WorkflowTaskResult) {
			r.CreationTimestamp = metav1.NewTime(podCreated.Add(-time.Second))
		}), nil, false, false, IgnoredPredatesPod, 0},
		{"a result of a pending node whose pod the cache has not shown yet waits", result("wf-3", "1", "true", out), nil, false, false, "", 1},
		{"a result the policy stamped with the node's own pod opens the gate", stampedBy(result("wf-1", "1", "true", out), "wf-main-"+fnv32a("wf.a"), "pod-uid-1"),
			nil, true, true, "", 0},
		{"a result another pod wrote (its node name hashes alike) is ignored", stampedBy(result("wf-1", "1", "true", out), "wf-x-main-"+fnv32a("wf.a"), "pod-uid-9"),
			nil, false, false, IgnoredOtherPod, 0},
		{"a result an earlier pod of the same name wrote is ignored", stampedBy(result("wf-1", "1", "true", out), "wf-main-"+fnv32a("wf.a"), "pod-uid-0"),
			nil, false, false, IgnoredOtherPod, 0},
		{"a result with half a stamp is ignored", stampedBy(result("wf-1", "1", "true", out), "wf-main-"+fnv32a("wf.a"), ""),
			nil, false, false, IgnoredOtherPod, 0},
		{"a result the executor account of the node's pod wrote opens the gate", stampedByAccount(result("wf-1", "1", "true", out), "reporter"),
			runsArgoexecAs("reporter"), true, true, "", 0},
		{"an executor account's result for a node whose pod runs argoexec as no account is ignored",
			stampedByAccount(result("wf-1", "1", "true", out), "reporter"), nil, false, false, IgnoredOtherAccount, 0},
		{"an executor account's result for a node whose pod runs argoexec as another account is ignored",
			stampedByAccount(result("wf-1", "1", "true", out), "reporter"), runsArgoexecAs("other"), false, false, IgnoredOtherAccount, 0},
		{"an account stamp beside a pod stamp is ignored, even naming the node's own pod and account",
			withStamp(stampedByAccount(result("wf-1", "1", "true", out), "reporter"), AnnotationWriterPodName, "wf-main-"+fnv32a("wf.a")),
			runsArgoexecAs("reporter"), false, false, IgnoredOtherAccount, 0},
		{"an executor account's result created before the node's pod is ignored", edit(stampedByAccount(result("wf-1", "1", "true", out), "reporter"),
			func(r *wfv1.WorkflowTaskResult) { r.CreationTimestamp = metav1.NewTime(podCreated.Add(-time.Second)) }),
			runsArgoexecAs("reporter"), false, false, IgnoredPredatesPod, 0},
		{"an executor account's result for a pod the controller did not create is ignored", stampedByAccount(result("wf-1", "1", "true", out), "reporter"),
			func(p *corev1.Pod) { runsArgoexecAs("reporter")(p); p.Name = "wf-evil-1" }, false, false, IgnoredNoMatchingPod, 0},
		{"a pod stamp with an empty account stamp is judged as the pod's", withStamp(stampedBy(result("wf-1", "1", "true", out), "wf-main-"+fnv32a("wf.a"), "pod-uid-1"),
			AnnotationWriterServiceAccount, ""), runsArgoexecAs("reporter"), true, true, "", 0},
		{"empty pod stamps with an empty account stamp are no pod's", withStamp(stampedBy(result("wf-1", "1", "true", out), "", ""),
			AnnotationWriterServiceAccount, ""), runsArgoexecAs("reporter"), false, false, IgnoredOtherPod, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wf := workflow()
			pods := map[string]*corev1.Pod{"wf-1": podOf()}
			if tc.pod != nil {
				tc.pod(pods["wf-1"])
				if pods["wf-1"].Name == "" {
					delete(pods, "wf-1")
				}
			}
			stats := Merge(wf, []*wfv1.WorkflowTaskResult{tc.result}, pods)
			n := wf.Status.Nodes["wf-1"]
			if Synced(&n) != tc.wantSynced {
				t.Errorf("synced = %v, want %v", Synced(&n), tc.wantSynced)
			}
			if got := n.Outputs != nil && len(n.Outputs.Parameters) == 1; got != tc.wantParam {
				t.Errorf("outputs = %v, want parameter %v", n.Outputs, tc.wantParam)
			}
			if n.Outputs == nil || n.Outputs.ExitCode == nil || *n.Outputs.ExitCode != "0" {
				t.Errorf("the controller's exit code was lost in the merge")
			}
			var want []Ignored
			if tc.ignored != "" {
				want = []Ignored{{Name: tc.result.Name, Reason: tc.ignored}}
			}
			if !reflect.DeepEqual(stats.Ignored, want) || stats.Pending != tc.pending {
				t.Errorf("stats = %+v, want ignored %v, pending %d", stats, want, tc.pending)
			}
			if owned := Owned(wf, []*wfv1.WorkflowTaskResult{tc.result}, pods); (len(owned) == 1) != (tc.ignored == "" && tc.pending == 0) {
				t.Errorf("Owned = %v disagrees with Merge", owned)
			}
		})
	}
}

func TestTheResultOfASettledNodeWhosePodWasCollectedIsNotReportedAsIgnored(t *testing.T) {
	wf := workflow()
	n := wf.Status.Nodes["wf-1"]
	synced := true
	n.Phase, n.TaskResultSynced = wfv1.NodeSucceeded, &synced
	wf.Status.Nodes["wf-1"] = n
	// podGC removed the pod after the merge that settled the node; the result stays in the cache.
	stats := Merge(wf, []*wfv1.WorkflowTaskResult{result("wf-1", "1", "true", nil)}, map[string]*corev1.Pod{})
	if len(stats.Ignored) != 0 || stats.Pending != 1 {
		t.Errorf("stats = %+v, want nothing ignored (a Warning on every pass of a healthy workflow) and the result skipped", stats)
	}
	if got := wf.Status.Nodes["wf-1"]; got.Phase != wfv1.NodeSucceeded || !Synced(&got) {
		t.Errorf("the settled node changed: %s synced=%v", got.Phase, Synced(&got))
	}
}

func TestAForgedResultNeverReplacesOutputsTheControllerOrAnActionSet(t *testing.T) {
	forged := &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "answer", Value: wfv1.AnyStringPtr("FORGED")}}, ExitCode: ptr("1")}
	wf := workflow()
	pods := map[string]*corev1.Pod{"wf-1": podOf()}
	stats := Merge(wf, []*wfv1.WorkflowTaskResult{result("wf-2", "1", "true", forged), result("wf-1", "1", "true", forged)}, pods)
	if got := wf.Status.Nodes["wf-2"].Outputs.Parameters[0].Value.String(); got != "no" {
		t.Errorf("the approver's answer became %q", got)
	}
	if got := *wf.Status.Nodes["wf-1"].Outputs.ExitCode; got != "0" {
		t.Errorf("the exit code the controller recorded became %q", got)
	}
	if want := []Ignored{{Name: "wf-2", Reason: IgnoredNotAPodNode}}; !reflect.DeepEqual(stats.Ignored, want) {
		t.Errorf("ignored = %v, want %v", stats.Ignored, want)
	}
}

func TestTimeoutsComeFromTheAnnotationWhenValid(t *testing.T) {
	for annotation, want := range map[string]time.Duration{"": DefaultTimeout, "30s": 30 * time.Second, "soon": DefaultTimeout, "-1s": DefaultTimeout} {
		wf := &wfv1.Workflow{}
		if annotation != "" {
			wf.Annotations = map[string]string{AnnotationTimeout: annotation}
		}
		got, err := TimeoutFor(wf, DefaultTimeout)
		if got != want {
			t.Errorf("%q: timeout %s, want %s", annotation, got, want)
		}
		if (annotation == "soon" || annotation == "-1s") != (err != nil) {
			t.Errorf("%q: err = %v", annotation, err)
		}
	}
}

func TestTheTimeoutMessageSaysWhatWasMissing(t *testing.T) {
	tmpl := &wfv1.Template{Script: &wfv1.ScriptTemplate{}, Outputs: wfv1.Outputs{
		Parameters: []wfv1.Parameter{{Name: "p"}}, Artifacts: []wfv1.Artifact{{Name: "a"}}}}
	cases := map[string]struct {
		r    *wfv1.WorkflowTaskResult
		want []string
	}{
		"no result":   {nil, []string{"TaskResultTimeout: ", "no task result exists", "parameter p", "artifact a", "result"}},
		"placeholder": {result("x", "1", "false", nil), []string{"placeholder"}},
		"unfinalized": {result("x", "1", "false", &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("v")}}}),
			[]string{"never finalized", "artifact a"}},
	}
	for name, tc := range cases {
		msg := TimeoutMessage(tmpl, tc.r, time.Minute)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", name, msg, w)
			}
		}
	}
}

func TestADirectReadWaitsForTheGraceAndOnlyForEndedPodsWithoutACompleteResult(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := false
	n := &wfv1.NodeStatus{Type: wfv1.NodeTypePod, TaskResultSynced: &f}
	done := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		r    *wfv1.WorkflowTaskResult
		now  time.Time
		want bool
	}{
		{"within the grace the cache gets its chance", done, nil, since.Add(500 * time.Millisecond), false},
		{"after the grace it is read", done, nil, since.Add(DirectReadGrace), true},
		{"a running pod's result is not due", running, nil, since.Add(time.Hour), false},
		{"a complete cached result needs no read", done, result("x", "1", "true", nil), since.Add(time.Hour), false},
	}
	for _, tc := range cases {
		if got := NeedsDirectRead(n, tc.pod, tc.r, since, tc.now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMissingOutputsHonoursDefaultsAndOptionalArtifacts(t *testing.T) {
	tmpl := &wfv1.Template{Outputs: wfv1.Outputs{
		Parameters: []wfv1.Parameter{
			{Name: "out", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/out"}},
			{Name: "soft", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/soft", Default: wfv1.AnyStringPtr("d")}},
		},
		Artifacts: []wfv1.Artifact{{Name: "logs", Path: "/tmp/logs"}, {Name: "extra", Path: "/tmp/x", Optional: true}},
	}}
	for _, tc := range []struct {
		sentence string
		outputs  *wfv1.Outputs
		want     []string
	}{
		{"nothing reported misses every required output, not the defaulted or optional ones", nil, []string{"parameter out", "artifact logs"}},
		{"a parameter without a value is missing", &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out"}}, Artifacts: []wfv1.Artifact{{Name: "logs"}}},
			[]string{"parameter out"}},
		{"everything required reported is complete", &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "out", Value: wfv1.AnyStringPtr("v")}},
			Artifacts: []wfv1.Artifact{{Name: "logs"}}}, nil},
	} {
		if got := MissingOutputs(tmpl, tc.outputs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: missing = %v, want %v", tc.sentence, got, tc.want)
		}
	}
	got := ApplyOutputDefaults(tmpl, nil)
	if got == nil || len(got.Parameters) != 1 || got.Parameters[0].Name != "soft" || got.Parameters[0].Value.String() != "d" {
		t.Errorf("defaults applied = %+v, want soft=d only", got)
	}
	kept := ApplyOutputDefaults(tmpl, &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "soft", Value: wfv1.AnyStringPtr("reported")}}})
	if kept.Parameters[0].Value.String() != "reported" {
		t.Errorf("a reported value was replaced by the default: %+v", kept.Parameters)
	}
}

// stampedBy is r with the writer stamp the admission policy sets: pod name, and pod UID unless uid is "".
func stampedBy(r *wfv1.WorkflowTaskResult, name, uid string) *wfv1.WorkflowTaskResult {
	r.Annotations = map[string]string{AnnotationWriterPodName: name}
	if uid != "" {
		r.Annotations[AnnotationWriterPodUID] = uid
	}
	return r
}

// stampedByAccount is r as the stamp policy leaves a write by ServiceAccount account's token without pod
// claims: the account named, the pod stamps empty.
func stampedByAccount(r *wfv1.WorkflowTaskResult, account string) *wfv1.WorkflowTaskResult {
	r.Annotations = map[string]string{AnnotationWriterServiceAccount: account, AnnotationWriterPodName: "", AnnotationWriterPodUID: ""}
	return r
}

func withStamp(r *wfv1.WorkflowTaskResult, key, value string) *wfv1.WorkflowTaskResult {
	r.Annotations[key] = value
	return r
}

// runsArgoexecAs makes the pod the one the controller creates to run argoexec as executor account account.
func runsArgoexecAs(account string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: common.ServiceAccountTokenVolumeName,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: account + ".service-account-token"}}})
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: common.WaitContainerName,
			Env: []corev1.EnvVar{{Name: podspec.EnvExecutorServiceAccount, Value: account}}})
	}
}

// A result's progress is its node's while valid; one argo's Progress.IsValid would panic on (no '/') is
// ignored, as any invalid progress is, instead of ending every pass of the workflow in a panic.
func TestAResultsProgressIsMergedOnlyWhenValidAndNeverPanics(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		progress wfv1.Progress
		want     wfv1.Progress
	}{
		{"a valid progress becomes the node's", "3/10", "3/10"},
		{"more done than there is is ignored", "11/10", ""},
		{"a progress without '/' is ignored without a panic", "5", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := workflow()
			r := result("wf-1", "1", "false", nil)
			r.Progress = tc.progress
			Merge(wf, []*wfv1.WorkflowTaskResult{r}, map[string]*corev1.Pod{"wf-1": podOf()})
			if got := wf.Status.Nodes["wf-1"].Progress; got != tc.want {
				t.Errorf("node progress %q, want %q", got, tc.want)
			}
		})
	}
}

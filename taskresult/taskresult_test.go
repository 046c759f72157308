package taskresult

import (
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func workflow() *wfv1.Workflow {
	f := false
	return &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "wf", UID: "uid-1"},
		Status: wfv1.WorkflowStatus{Nodes: wfv1.Nodes{
			"wf-1": {ID: "wf-1", Name: "wf.a", Type: wfv1.NodeTypePod, TaskResultSynced: &f,
				Outputs: &wfv1.Outputs{ExitCode: ptr("0")}},
		}},
	}
}

func ptr(s string) *string { return &s }

func result(name, owner, label string, outputs *wfv1.Outputs) *wfv1.WorkflowTaskResult {
	return &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{common.LabelKeyReportOutputsCompleted: label},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", UID: types.UID("uid-" + owner)}}},
		NodeResult: wfv1.NodeResult{Outputs: outputs},
	}
}

func TestMergeTakesOutputsAndOpensTheGateOnlyForItsOwnCompleteResults(t *testing.T) {
	out := &wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "p", Value: wfv1.AnyStringPtr("v")}}}
	cases := []struct {
		name       string
		results    []*wfv1.WorkflowTaskResult
		wantSynced bool
		wantParam  bool
		foreign    int
		unknown    int
	}{
		{"a placeholder keeps the gate closed", []*wfv1.WorkflowTaskResult{result("wf-1", "1", "false", nil)}, false, false, 0, 0},
		{"outputs without the completed label merge but keep it closed", []*wfv1.WorkflowTaskResult{result("wf-1", "1", "false", out)}, false, true, 0, 0},
		{"a complete result opens it", []*wfv1.WorkflowTaskResult{result("wf-1", "1", "true", out)}, true, true, 0, 0},
		{"another workflow's result is ignored and counted", []*wfv1.WorkflowTaskResult{result("wf-1", "2", "true", out)}, false, false, 1, 0},
		{"a result for no node is ignored and counted", []*wfv1.WorkflowTaskResult{result("wf-9", "1", "true", out)}, false, false, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wf := workflow()
			stats := Merge(wf, tc.results)
			n := wf.Status.Nodes["wf-1"]
			if Synced(&n) != tc.wantSynced {
				t.Errorf("synced = %v, want %v", Synced(&n), tc.wantSynced)
			}
			if got := n.Outputs != nil && len(n.Outputs.Parameters) == 1; got != tc.wantParam {
				t.Errorf("outputs = %v, want parameter %v", n.Outputs, tc.wantParam)
			}
			if tc.wantParam && (n.Outputs.ExitCode == nil || *n.Outputs.ExitCode != "0") {
				t.Errorf("the controller's exit code was lost in the merge")
			}
			if len(stats.Foreign) != tc.foreign || len(stats.Unknown) != tc.unknown {
				t.Errorf("stats = %+v", stats)
			}
		})
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

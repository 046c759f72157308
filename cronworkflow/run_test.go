package cronworkflow

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewRunCarriesArgosMetadata(t *testing.T) {
	cwf := &wfv1.CronWorkflow{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: "cron-uid", Labels: map[string]string{
			common.LabelKeyControllerInstanceID: "blue", "workflows.argoproj.io/creator": "alice", "team": "not-propagated"}},
		Spec: wfv1.CronWorkflowSpec{
			WorkflowSpec:     wfv1.WorkflowSpec{Entrypoint: "main"},
			WorkflowMetadata: &metav1.ObjectMeta{Labels: map[string]string{"env": "prod"}, Annotations: map[string]string{"note": "x"}},
		},
	}
	wf := newRun(cwf, t0)
	checks := []struct{ what, got, want string }{
		{"name", wf.Name, "nightly-1796385630"},
		{"cron label", wf.Labels[common.LabelKeyCronWorkflow], "nightly"},
		{"instance id label", wf.Labels[common.LabelKeyControllerInstanceID], "blue"},
		{"creator label", wf.Labels["workflows.argoproj.io/creator"], "alice"},
		{"unlisted label", wf.Labels["team"], ""},
		{"workflowMetadata label", wf.Labels["env"], "prod"},
		{"workflowMetadata annotation", wf.Annotations["note"], "x"},
		{"scheduled-time annotation", wf.Annotations[common.AnnotationKeyCronWfScheduledTime], "2026-12-04T12:00:30Z"},
		{"entrypoint", wf.Spec.Entrypoint, "main"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !ownedBy(wf, cwf) {
		t.Errorf("owner references %+v do not name the CronWorkflow as controller", wf.OwnerReferences)
	}
	if ref := wf.OwnerReferences[0]; ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference %+v does not block owner deletion (foreground deletion would not wait for runs)", ref)
	}
}

package cronworkflow_test

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/test/harness"
)

// cronWriter is a client for a user who may create and update CronWorkflows in the env's namespace, as a
// namespace's admins may (argo's CRD has no status subresource, so the status is theirs to write too).
func (e *env) cronWriter(user string) versioned.Interface {
	e.t.Helper()
	return versioned.NewForConfigOrDie(harness.Grant(e.t, cp.Config(), e.Namespace, user, rbacv1.PolicyRule{
		APIGroups: []string{"argoproj.io"}, Resources: []string{"cronworkflows"}, Verbs: []string{"create", "get", "update"}}))
}

// Issue #44 item 9: the missed-run rule walked every tick since status.lastScheduledTime, which the
// CronWorkflow's writer sets: "@every 1s" from the year 1 is 64 billion ticks on every start (minutes of CPU, 820 million from 2000).
func TestAMissedRunFromADateLongAgoIsDecidedAtOnce(t *testing.T) {
	e := newEnv(t)
	admin := e.cronWriter("cron-admin")
	cwf := &wfv1.CronWorkflow{}
	if err := yaml.UnmarshalStrict([]byte(cronManifest("ages", "pass", "  startingDeadlineSeconds: 60")), cwf); err != nil {
		t.Fatal(err)
	}
	cwf.Spec.Schedules = []string{"@every 1s"}
	// The schedule was in force when the run of the year 1 was scheduled (argo's last-used-schedule), so the
	// missed-run rule applies on the reconciler's first pass.
	cwf.Annotations = map[string]string{"cronworkflows.argoproj.io/last-used-schedule": "@every 1s"}
	cwf.Status.LastScheduledTime = &metav1.Time{Time: time.Date(1, 6, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := admin.ArgoprojV1alpha1().CronWorkflows(e.Namespace).Create(t.Context(), cwf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := e.startReconciler()
	// The latest tick before the reconciler's first pass (the fake clock's start, a whole second) is the
	// second before it, within the 60 s deadline.
	missed := start.Add(-time.Second)
	e.waitRunPhase(runName("ages", missed), wfv1.WorkflowSucceeded)
	e.untilCron("ages", "recorded the missed run", func(c *wfv1.CronWorkflow) bool {
		return c.Status.LastScheduledTime != nil && c.Status.LastScheduledTime.Time.Equal(missed)
	})
	e.armed(start.Add(time.Second), r)
}

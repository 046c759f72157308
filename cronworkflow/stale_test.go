package cronworkflow

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestACacheCopyOlderThanOurLastWriteIsSkipped(t *testing.T) {
	cron := func(uid types.UID, rv string) *wfv1.CronWorkflow {
		return &wfv1.CronWorkflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: uid, ResourceVersion: rv}}
	}
	const key = "ns/c"
	for _, tc := range []struct {
		name    string
		written *wfv1.CronWorkflow // our last write; nil: none
		forget  bool               // the CronWorkflow was seen deleted since
		cached  *wfv1.CronWorkflow
		want    bool
	}{
		{name: "a copy from before our last write is stale: it may lack the run that write recorded active",
			written: cron("u1", "120"), cached: cron("u1", "118"), want: true},
		{name: "the echo of our write is not stale", written: cron("u1", "120"), cached: cron("u1", "120")},
		{name: "a newer copy, written by someone else after us, is not stale", written: cron("u1", "120"), cached: cron("u1", "131")},
		{name: "a CronWorkflow recreated under the same name is not held to the old one's write",
			written: cron("u1", "120"), cached: cron("u2", "118")},
		{name: "nothing written: nothing is stale", cached: cron("u1", "5")},
		{name: "a deleted CronWorkflow's write is forgotten", written: cron("u1", "120"), forget: true, cached: cron("u1", "118")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{written: map[string]lastWrite{}}
			if tc.written != nil {
				r.recordWrite(tc.written)
			}
			if tc.forget {
				r.forgetWrite(key)
			}
			if got := r.stale(key, tc.cached); got != tc.want {
				t.Errorf("stale = %t, want %t", got, tc.want)
			}
		})
	}
}

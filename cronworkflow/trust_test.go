package cronworkflow

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/provenance"
)

func TestARunCountsOnlyWhenTheReconcilerCanProveItCreatedIt(t *testing.T) {
	key, err := provenance.NewKey(bytes.Repeat([]byte{3}, provenance.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	since := t0
	cwf := &wfv1.CronWorkflow{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "cron-uid",
		Annotations: map[string]string{AnnotationSealedSince: since.Format(time.RFC3339)}}}
	cwf.Status.LastScheduledTime = &metav1.Time{Time: t0.Add(time.Hour)}
	cwf.Status.Active = []corev1.ObjectReference{{Name: "listed", UID: "listed-uid"}}
	tick := func(d time.Duration) string { return fmt.Sprintf("c-%d", t0.Add(d).Unix()) }
	run := func(name string, uid types.UID, created time.Time, annotations map[string]string) *wfv1.Workflow {
		return &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, CreationTimestamp: metav1.NewTime(created), Annotations: annotations}}
	}
	nameSeal := func(name string) map[string]string {
		return map[string]string{AnnotationRunSeal: key.Seal(provenance.PurposeCronRun, "cron-uid", name)}
	}
	uidSeal := func(name string, uid types.UID) map[string]string {
		return map[string]string{AnnotationRunUIDSeal: key.Seal(provenance.PurposeCronRun, "cron-uid", name, string(uid))}
	}
	after := since.Add(time.Minute)
	for _, tc := range []struct {
		sentence    string
		key         *provenance.Key
		run         *wfv1.Workflow
		createdHere bool
		want        runVerdict
	}{
		{"a run with its UID seal counts", key, run(tick(time.Minute), "u1", after, uidSeal(tick(time.Minute), "u1")), false, runOwn},
		{"a copy carrying another run's UID seal is forged", key, run(tick(time.Minute), "copy", after, uidSeal(tick(time.Minute), "u1")), false, runForged},
		{"a run this process created counts and is sealed", key, run(tick(2*time.Hour), "u2", after, nil), true, runOwnToSeal},
		{"an unsealed workflow listed in status.active does not count: that list is the CronWorkflow writer's", key,
			run("listed", "listed-uid", after, nil), false, runForged},
		{"a name-sealed run of a tick the status has not recorded counts and is sealed", key,
			run(tick(2*time.Hour), "u3", after, nameSeal(tick(2*time.Hour))), false, runOwnToSeal},
		{"a name-sealed copy of a run of a recorded tick is forged", key,
			run(tick(time.Minute), "u4", after, nameSeal(tick(time.Minute))), false, runForged},
		{"a name seal made for another name is forged", key, run(tick(2*time.Hour), "u5", after, nameSeal(tick(3*time.Hour))), false, runForged},
		{"an unsealed run created before the reconciler first saw the CronWorkflow is legacy and counts", key,
			run("argos", "u6", since.Add(-time.Minute), nil), false, runOwn},
		{"an unsealed run created after that is forged", key, run("mallorys", "u7", after, nil), false, runForged},
		{"without a key every run counts", nil, run("mallorys", "u7", after, nil), false, runOwn},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			trust := (&Reconciler{opts: Options{RecordKey: tc.key}}).trustOf(cwf)
			if got := trust.verdict(tc.run, tc.createdHere); got != tc.want {
				t.Fatalf("verdict = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOnlyArgosRunNamesAreLookedUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"nightly-1796385660", true},
		{"nightly-0", true},
		{"nightly-", false},
		{"nightly-x1", false},
		{"nightly-1796385660-x", false},
		{"nightly", false},
		{"victim", false},
		{"other-1796385660", false},
		{"nightly-99999999999999999999999", false},
	} {
		if got := isRunName("nightly", tc.name); got != tc.want {
			t.Errorf("isRunName(nightly, %q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

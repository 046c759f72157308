package retention

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/config"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func wf(name string, phase wfv1.WorkflowPhase, ageMinutes int) Workflow {
	return Workflow{Namespace: "ns", Name: name, UID: types.UID(name), Phase: phase,
		Created: metav1.NewTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).Add(-time.Duration(ageMinutes) * time.Minute))}
}

func TestExcess(t *testing.T) {
	all := []Workflow{wf("s-new", wfv1.WorkflowSucceeded, 1), wf("s-old", wfv1.WorkflowSucceeded, 10), wf("s-mid", wfv1.WorkflowSucceeded, 5),
		wf("f-1", wfv1.WorkflowFailed, 3), wf("e-1", wfv1.WorkflowError, 2), wf("e-2", wfv1.WorkflowError, 4)}
	for _, tc := range []struct {
		sentence string
		policy   *config.RetentionPolicy
		want     []string
	}{
		{"no policy keeps every workflow", nil, nil},
		{"the oldest beyond each phase's count go", &config.RetentionPolicy{Completed: 1, Failed: 1, Errored: 1}, []string{"s-mid", "s-old", "e-2"}},
		{"a count left at zero in a set policy keeps none of that phase, as in argo", &config.RetentionPolicy{Completed: 3}, []string{"f-1", "e-1", "e-2"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var got []string
			for _, w := range Excess(all, tc.policy) {
				got = append(got, w.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("excess = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCollectDeletesTheExcessAndCountsIt(t *testing.T) {
	var deleted []string
	reg := prometheus.NewRegistry()
	c, err := NewCollector(Collector{
		Completed: func() []Workflow {
			return []Workflow{wf("a", wfv1.WorkflowSucceeded, 1), wf("b", wfv1.WorkflowSucceeded, 2)}
		},
		Policy: func() *config.RetentionPolicy { return &config.RetentionPolicy{Completed: 1, Failed: 1, Errored: 1} },
		Delete: func(_ context.Context, ns, name string, uid types.UID) error {
			deleted = append(deleted, ns+"/"+name+"@"+string(uid))
			return nil
		},
		Log: slog.New(slog.DiscardHandler),
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deleted, []string{"ns/b@b"}) {
		t.Errorf("deleted %v, want the older ns/b with its UID as precondition", deleted)
	}
	if got := testutil.ToFloat64(c.metrics.deleted.WithLabelValues(string(wfv1.WorkflowSucceeded))); got != 1 {
		t.Errorf("deleted metric = %v, want 1", got)
	}
}

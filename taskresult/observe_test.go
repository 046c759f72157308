package taskresult

import (
	"context"
	"log/slog"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argofake "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned/fake"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/wfguard/wfguard/extstatus"
)

var waitStart = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func newObserver(t *testing.T, budget int) (*Observer, *argofake.Clientset) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	client := argofake.NewSimpleClientset()
	return &Observer{Client: client, Budget: budget, Recorder: record.NewFakeRecorder(10), Log: slog.New(slog.DiscardHandler), Metrics: m}, client
}

// waitingWorkflow has one Running pod node per id, gate closed, waiting for its result since waitStart.
func waitingWorkflow(name string, ids ...string) (*wfv1.Workflow, *extstatus.Extensions) {
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Nodes: wfv1.Nodes{}}}
	ext := &extstatus.Extensions{ResultWaits: map[string]metav1.Time{}}
	for _, id := range ids {
		closed := false
		wf.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: name + "." + id, Type: wfv1.NodeTypePod, Phase: wfv1.NodeRunning, TaskResultSynced: &closed}
		ext.ResultWaits[id] = metav1.NewTime(waitStart)
	}
	return wf, ext
}

// resultArrived is what the pass that merged id's complete result persists: the node Succeeded, its gate open.
func resultArrived(wf *wfv1.Workflow, ext *extstatus.Extensions, id string) {
	n := wf.Status.Nodes[id]
	open := true
	n.Phase, n.TaskResultSynced = wfv1.NodeSucceeded, &open
	wf.Status.Nodes[id] = n
	delete(ext.ResultWaits, id)
}

func histogramOf(t *testing.T, h prometheus.Histogram) (count uint64, sum float64) {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestTheWaitHistogramAndTheWaitingGaugeFollowPersistedPasses(t *testing.T) {
	o, _ := newObserver(t, 0)
	a, extA := waitingWorkflow("a", "n1", "n2")
	b, extB := waitingWorkflow("b", "n3")
	for _, step := range []struct {
		sentence  string
		persist   func()
		wantCount uint64
		wantSum   float64
		wantGauge float64
	}{
		{"a pass that records two waiting nodes sets the gauge to 2 and observes no wait",
			func() { o.Persisted("ns/a", a, extA, nil, 0, waitStart) }, 0, 0, 2},
		{"another workflow's waiting node adds to the gauge",
			func() { o.Persisted("ns/b", b, extB, nil, 0, waitStart) }, 0, 0, 3},
		{"a pass that opens one node's gate observes its wait, 3.5s by the clock, once, and the gauge falls",
			func() {
				before := WaitingNodes(a, extA)
				resultArrived(a, extA, "n1")
				o.Persisted("ns/a", a, extA, before, 0, waitStart.Add(3500*time.Millisecond))
			}, 1, 3.5, 2},
		{"a pass that changes nothing observes nothing more",
			func() { o.Persisted("ns/a", a, extA, WaitingNodes(a, extA), 0, waitStart.Add(4*time.Second)) }, 1, 3.5, 2},
		{"the other workflow's node gets its result after 10s: a second observation",
			func() {
				before := WaitingNodes(b, extB)
				resultArrived(b, extB, "n3")
				o.Persisted("ns/b", b, extB, before, 0, waitStart.Add(10*time.Second))
			}, 2, 13.5, 1},
		{"a workflow that is gone is forgotten by the gauge",
			func() { o.SetWaiting("ns/a", 0) }, 2, 13.5, 0},
	} {
		step.persist()
		count, sum := histogramOf(t, o.Metrics.resultWait)
		if count != step.wantCount || sum != step.wantSum {
			t.Errorf("%s: wfguard_taskresult_wait_seconds count=%d sum=%v, want count=%d sum=%v", step.sentence, count, sum, step.wantCount, step.wantSum)
		}
		if got := testutil.ToFloat64(o.Metrics.waitingNodes); got != step.wantGauge {
			t.Errorf("%s: wfguard_taskresult_waiting_nodes = %v, want %v", step.sentence, got, step.wantGauge)
		}
	}
}

func TestNodesPastTheReadBudgetKeepWaitingUnreadAndStillBounded(t *testing.T) {
	const timeout = 10 * time.Second
	for _, tc := range []struct {
		sentence       string
		budget         int
		nodes          []string
		wantReads      int
		wantOverBudget float64
		wantNotFound   float64
	}{
		{"within the budget every late node is read once", 3, []string{"n1", "n2"}, 2, 0, 2},
		{"past a budget of one, one node is read and the other keeps waiting unread", 1, []string{"n1", "n2"}, 1, 1, 1},
		{"past a budget of one, three more nodes are counted over budget", 1, []string{"n1", "n2", "n3", "n4"}, 1, 3, 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			o, client := newObserver(t, tc.budget)
			wf, ext := waitingWorkflow("w", tc.nodes...)
			pods := map[string]*corev1.Pod{}
			for _, id := range tc.nodes {
				pods[id] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: id}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
			}
			now := waitStart.Add(timeout) // past the grace and at the deadline: a read is due for every node

			obs := o.Observe(context.Background(), wf, ext, pods, nil, now)

			if got := len(client.Actions()); got != tc.wantReads {
				t.Errorf("%d reads past the cache, want %d", got, tc.wantReads)
			}
			if got := testutil.ToFloat64(o.Metrics.directReads.WithLabelValues(directReadOverBudget)); got != tc.wantOverBudget {
				t.Errorf("wfguard_taskresult_direct_reads_total{outcome=over_budget} = %v, want %v", got, tc.wantOverBudget)
			}
			if got := testutil.ToFloat64(o.Metrics.directReads.WithLabelValues(directReadNotFound)); got != tc.wantNotFound {
				t.Errorf("wfguard_taskresult_direct_reads_total{outcome=not_found} = %v, want %v", got, tc.wantNotFound)
			}
			// The two reads above create both series; any third outcome would be a read that should not be.
			if got := testutil.CollectAndCount(o.Metrics.directReads); got != 2 {
				t.Errorf("%d series of wfguard_taskresult_direct_reads_total, want only not_found and over_budget", got)
			}
			if got := float64(len(obs.Unverified)); got != tc.wantOverBudget || (got > 0) != obs.RequeueSoon {
				t.Errorf("unverified %v, requeue soon %v: want the %v nodes over budget unverified and a pass again soon", obs.Unverified, obs.RequeueSoon, tc.wantOverBudget)
			}
			for id := range wf.Status.Nodes {
				n := wf.Status.Nodes[id]
				if Synced(&n) {
					t.Errorf("node %s's gate opened without its result", id)
				}
				verified := !obs.Unverified[id]
				// An unread node does not expire at the deadline on the cache's word, but at twice it.
				if v := Judge(ext, &n, Evidence{Verified: verified}, timeout, now); v.Expired == !verified {
					t.Errorf("node %s (verified %v) at its deadline: %+v", id, verified, v)
				}
				if v := Judge(ext, &n, Evidence{Verified: verified}, timeout, waitStart.Add(2*timeout)); !v.Expired {
					t.Errorf("node %s (verified %v) at twice its deadline: %+v, want expired", id, verified, v)
				}
			}
		})
	}
}

package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordingResults records the stale results the engine deletes, failing each with err.
type recordingResults struct {
	mu      sync.Mutex
	deleted []string
	err     error
}

func (r *recordingResults) Delete(_ context.Context, res *wfv1.WorkflowTaskResult) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, res.Name)
	return r.err
}

func TestANodeWithAPreviousRunsResultIsCreatedOnlyOnceTheResultIsDeleted(t *testing.T) {
	// The fan-out's node IDs, as a pass without stale results creates them.
	first := &recordingPods{created: map[string]*corev1.Pod{}}
	if err := (&Engine{Pods: first}).Execute(context.Background(), passOver(t, fanOut(3))); err != nil {
		t.Fatal(err)
	}
	ids := slices.Sorted(maps.Keys(first.created))
	stale := ids[1]
	for _, tc := range []struct {
		sentence    string
		results     *recordingResults // nil: the engine has no ResultControl
		stale       bool
		wantDeleted []string
		wantCreated []string
		wantErr     bool
	}{
		{sentence: "without stale results every pod is created and nothing is deleted",
			results: &recordingResults{}, wantCreated: ids},
		{sentence: "a node's stale result is deleted and the node held back to the next pass; the others are created",
			results: &recordingResults{}, stale: true, wantDeleted: []string{stale}, wantCreated: []string{ids[0], ids[2]}},
		{sentence: "a failed deletion holds the node back too, and the pass is retried as after a transient error",
			results: &recordingResults{err: errors.New("etcd is down")}, stale: true,
			wantDeleted: []string{stale}, wantCreated: []string{ids[0], ids[2]}, wantErr: true},
		{sentence: "an engine without a ResultControl creates every pod",
			stale: true, wantCreated: ids},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			e := &Engine{Pods: pods}
			if tc.results != nil {
				e.Results = tc.results
			}
			p := passOver(t, fanOut(3))
			if tc.stale {
				p.StaleResults = map[string]*wfv1.WorkflowTaskResult{stale: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: stale}}}
			}
			err := e.Execute(context.Background(), p)
			if (err != nil) != tc.wantErr || (err != nil && !isAPIError(err)) {
				t.Fatalf("Execute = %v, want a transient error: %v", err, tc.wantErr)
			}
			var deleted []string
			if tc.results != nil {
				deleted = tc.results.deleted
			}
			if !slices.Equal(deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			if got := slices.Sorted(maps.Keys(pods.created)); !slices.Equal(got, tc.wantCreated) {
				t.Errorf("created pods of %v, want %v", got, tc.wantCreated)
			}
			_, kept := p.WF.Status.Nodes[stale]
			if heldBack := tc.stale && tc.results != nil; kept == heldBack {
				t.Errorf("node %s in the status = %v; a node held back for its stale result is forgotten until the next pass", stale, kept)
			}
			if heldBack := tc.stale && tc.results != nil; heldBack && (p.requeueAt.IsZero() || p.requeueAt.After(p.Now.Add(staleResultPoll))) {
				t.Errorf("next pass at %v, want within %s", p.requeueAt, staleResultPoll)
			}
		})
	}
}

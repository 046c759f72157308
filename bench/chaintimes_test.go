package bench

import (
	"testing"
	"time"
)

// observedChain records a chain of pods for workflow wf: pod i seen at added[i] and done (pod and result)
// at done[i], in ms after t0; the workflow completes at completed ms (negative: not seen completed).
func observedChain(o *observer, t0 time.Time, wf string, added, done []int, completed int) {
	at := func(msAfter int) time.Time { return t0.Add(time.Duration(msAfter) * time.Millisecond) }
	for i := range added {
		id := wf + "-" + string(rune('a'+i))
		o.podAdded[id] = at(added[i])
		o.nodeName[id] = wf + ".t" + string(rune('0'+i))
		if done[i] >= 0 {
			o.podDone[id] = at(done[i] - 5) // the result completes after the pod: the later one counts
			o.resultOK[id] = at(done[i])
		}
	}
	if completed >= 0 {
		o.wfDone[wf] = at(completed)
	}
}

func TestChainTimesSplitEachWorkflowIntoStartPodsHopsAndFinish(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	o := newObserver("ns")
	// a: start 100, pods (200-100)+(500-300)=300, hop 300-200=100, finish 600-500=100.
	observedChain(o, t0, "a", []int{100, 300}, []int{200, 500}, 600)
	// b completes last: start 300, pods 100+100=200, hop 200, finish 300.
	observedChain(o, t0, "b", []int{300, 600}, []int{400, 700}, 1000)
	// c never completed and d has a pod that never finished: both are left out.
	observedChain(o, t0, "c", []int{100}, []int{200}, -1)
	observedChain(o, t0, "d", []int{100, 300}, []int{200, -1}, 900)
	// e is not among the names asked for.
	observedChain(o, t0, "e", []int{0}, []int{5000}, 9000)

	got := o.chainTimes(t0, []string{"a", "b", "c", "d"})
	want := ChainBreakdown{Workflows: 2,
		Mean:    ChainTimes{StartMs: 200, PodsMs: 250, HopsMs: 150, FinishMs: 200},
		Slowest: ChainTimes{StartMs: 300, PodsMs: 200, HopsMs: 200, FinishMs: 300}}
	if got != want {
		t.Fatalf("chain times:\n got %+v\nwant %+v", got, want)
	}
	if total := got.Slowest.TotalMs(); total != 1000 {
		t.Errorf("the slowest chain's total is its workflow's time from submit to completion: got %v ms, want 1000", total)
	}
	if last := o.lastCompleted([]string{"a", "b", "c"}); !last.Equal(t0.Add(time.Second)) {
		t.Errorf("last completion among a, b, c: got %v, want b's at +1 s", last.Sub(t0))
	}
}

func TestMergedChainBreakdownsWeighTheMeanByWorkflowsAndAverageTheSlowest(t *testing.T) {
	tests := []struct {
		name string
		runs []ChainBreakdown
		want ChainBreakdown
	}{
		{
			name: "rounds of different sizes weigh their means by their workflows",
			runs: []ChainBreakdown{
				{Workflows: 1, Mean: ChainTimes{StartMs: 100, PodsMs: 400}, Slowest: ChainTimes{FinishMs: 100}},
				{Workflows: 3, Mean: ChainTimes{StartMs: 200, HopsMs: 40}, Slowest: ChainTimes{FinishMs: 300}},
			},
			want: ChainBreakdown{Workflows: 4, Mean: ChainTimes{StartMs: 175, PodsMs: 100, HopsMs: 30}, Slowest: ChainTimes{FinishMs: 200}},
		},
		{
			name: "a round that saw no complete chain does not count",
			runs: []ChainBreakdown{{}, {Workflows: 2, Mean: ChainTimes{StartMs: 50}, Slowest: ChainTimes{StartMs: 80}}},
			want: ChainBreakdown{Workflows: 2, Mean: ChainTimes{StartMs: 50}, Slowest: ChainTimes{StartMs: 80}},
		},
		{name: "no rounds give zeros", want: ChainBreakdown{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeChainBreakdowns(tt.runs); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

package bench

import (
	"strings"
	"testing"
)

func TestTheAPIServersLoadIsWhatItsCountersGainedOverTheRun(t *testing.T) {
	parse := func(text string) map[string]float64 {
		m, err := parseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := parse(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="workflows",verb="PUT"} 100
apiserver_request_total{code="201",resource="pods",verb="POST"} 50
apiserver_watch_events_total{group="",kind="Pod"} 1000
apiserver_watch_events_sizes_sum{group="",kind="Pod"} 4096
`)
	after := parse(`apiserver_request_total{code="200",resource="workflows",verb="PUT"} 130
apiserver_request_total{code="201",resource="pods",verb="POST"} 60
apiserver_request_total{code="200",resource="leases",verb="PUT"} 2
apiserver_watch_events_total{group="",kind="Pod"} 1100
apiserver_watch_events_total{group="argoproj.io",kind="Workflow"} 40
apiserver_watch_events_sizes_sum{group="",kind="Pod"} 5120
apiserver_watch_events_sizes_sum{group="argoproj.io",kind="Workflow"} 1024
`)
	got := apiServerLoad(before, after)
	checks := []struct {
		sentence  string
		got, want float64
	}{
		{"requests are every series' gain, a series first seen after the start included", got.Requests, 30 + 10 + 2},
		{"watch events likewise, over every kind", got.WatchEvents, 100 + 40},
		{"and the bytes those events carried", got.WatchEventBytes, 1024 + 1024},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.sentence, c.got, c.want)
		}
	}
	if cell := apiServerLoadCell(&got, 10); cell != "4.20 / 14.00 / 0.2" {
		t.Errorf("per pod over 10 pods the cell reads %q, want %q", cell, "4.20 / 14.00 / 0.2")
	}
	if cell := apiServerLoadCell(nil, 10); cell != notApplicable {
		t.Errorf("a run that did not measure the API server reads %q, want %q", cell, notApplicable)
	}
}

package harness

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricSumsTheSeriesThatCarryTheLabels(t *testing.T) {
	registry := prometheus.NewRegistry()
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"reason", "phase"})
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	histogram := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	registry.MustRegister(counter, gauge, histogram)
	counter.WithLabelValues("a", "x").Add(1)
	counter.WithLabelValues("a", "y").Add(2)
	counter.WithLabelValues("b", "x").Add(4)
	gauge.Set(7)
	histogram.Observe(1)
	histogram.Observe(2)
	for _, tc := range []struct {
		sentence string
		name     string
		labels   map[string]string
		want     float64
	}{
		{"no labels sum every series", "c_total", nil, 7},
		{"one label sums the series that carry it", "c_total", map[string]string{"reason": "a"}, 3},
		{"two labels pick the series with both", "c_total", map[string]string{"reason": "b", "phase": "x"}, 4},
		{"a label value no series has is zero", "c_total", map[string]string{"reason": "c"}, 0},
		{"a gauge is its value", "g", nil, 7},
		{"a histogram is its sample count", "h", nil, 2},
		{"a metric never registered is zero", "missing", nil, 0},
	} {
		if got := Metric(t, registry, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s: Metric(%s, %v) = %v, want %v", tc.sentence, tc.name, tc.labels, got, tc.want)
		}
	}
}

func TestDescribeListsTheNodesSortedByName(t *testing.T) {
	synced := true
	wf := &wfv1.Workflow{Status: wfv1.WorkflowStatus{Phase: wfv1.WorkflowFailed, Message: "child failed", Nodes: wfv1.Nodes{
		"id-b": {ID: "id-b", Name: "wf.b", Type: wfv1.NodeTypePod, Phase: wfv1.NodeFailed, Message: "exit code 1"},
		"id-a": {ID: "id-a", Name: "wf.a", Type: wfv1.NodeTypePod, Phase: wfv1.NodeSucceeded, TaskResultSynced: &synced},
	}}}
	got := Describe(wf)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 3 || lines[0] != `phase=Failed message="child failed"` ||
		!strings.Contains(lines[1], "wf.a") || !strings.Contains(lines[1], "synced=true") ||
		!strings.Contains(lines[2], "wf.b") || !strings.Contains(lines[2], `msg="exit code 1"`) || !strings.Contains(lines[2], "synced=nil") {
		t.Errorf("Describe =\n%s\nwant the phase line, then wf.a (synced=true), then wf.b (synced=nil, its message)", got)
	}
	if got := Describe(nil); got != "<no workflow>" {
		t.Errorf("Describe(nil) = %q, want <no workflow>", got)
	}
	if n := NodeByName(wf, "wf.b"); n == nil || n.ID != "id-b" {
		t.Errorf("NodeByName(wf.b) = %+v, want the node id-b", n)
	}
	if n := NodeByName(wf, "wf.c"); n != nil {
		t.Errorf("NodeByName(wf.c) = %+v, want nil", n)
	}
}

package custommetrics

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/yaml"
)

var start = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// def decodes one metric definition written as YAML.
func def(t *testing.T, y string) *wfv1.Prometheus {
	t.Helper()
	var m wfv1.Prometheus
	if err := yaml.UnmarshalStrict([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

func TestEmissionsBecomeArgosSeries(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		defs     []string
		spans    map[string]Span
		want     string
	}{
		{"a counter adds each emission's value, per label set",
			[]string{`{name: runs, help: Runs, labels: [{key: status, value: "{{status}}"}], counter: {value: "1"}}`,
				`{name: runs, help: Runs, labels: [{key: status, value: "{{status}}"}], counter: {value: "2"}}`},
			nil, `
# HELP argo_workflows_runs Runs
# TYPE argo_workflows_runs counter
argo_workflows_runs{status="Succeeded"} 3
`},
		{"a gauge is set, then added to and subtracted from",
			[]string{`{name: g, help: G, gauge: {value: "5"}}`, `{name: g, help: G, gauge: {value: "3", operation: Add}}`,
				`{name: g, help: G, gauge: {value: "1", operation: Sub}}`},
			nil, `
# HELP argo_workflows_g G
# TYPE argo_workflows_g gauge
argo_workflows_g 7
`},
		{"a histogram observes each value into its buckets",
			[]string{`{name: h, help: H, histogram: {buckets: [4, 2], value: "{{outputs.parameters.n}}"}}`},
			nil, `
# HELP argo_workflows_h H
# TYPE argo_workflows_h histogram
argo_workflows_h_bucket{le="2"} 0
argo_workflows_h_bucket{le="4"} 1
argo_workflows_h_bucket{le="+Inf"} 1
argo_workflows_h_sum 3
argo_workflows_h_count 1
`},
		{"a realtime gauge follows its running span to the scrape",
			[]string{`{name: d, help: D, gauge: {realtime: true, value: "{{duration}}"}}`},
			map[string]Span{VarDuration: {Start: start}}, `
# HELP argo_workflows_d D
# TYPE argo_workflows_d gauge
argo_workflows_d 90
`},
		{"a realtime gauge of a finished span keeps its length",
			[]string{`{name: d, help: D, gauge: {realtime: true, value: "{{workflow.duration}}"}}`},
			map[string]Span{VarWorkflowDuration: {Start: start, End: start.Add(10 * time.Second)}}, `
# HELP argo_workflows_d D
# TYPE argo_workflows_d gauge
argo_workflows_d 10
`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			r, err := NewRegistry(reg, func() time.Time { return start.Add(90 * time.Second) })
			if err != nil {
				t.Fatal(err)
			}
			// argo's scope always has both durations as text; a realtime gauge reads its span instead.
			vars := map[string]string{"status": "Succeeded", "outputs.parameters.n": "3", VarDuration: "0", VarWorkflowDuration: "0"}
			sc := Scope{Vars: vars, Spans: tc.spans}
			for _, y := range tc.defs {
				ems, problems := Resolver{}.Resolve([]*wfv1.Prometheus{def(t, y)}, sc, "uid", false)
				if len(problems) > 0 || len(ems) != 1 {
					t.Fatalf("resolving %s: %d emissions, problems %v", y, len(ems), problems)
				}
				if err := r.Emit(ems[0]); err != nil {
					t.Fatal(err)
				}
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDefinitionsArgoCannotEmitAreRefusedWithItsMessage(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		first    string // emitted before, "" for none
		def      string
		want     string
	}{
		{"a name with a dash", "", `{name: bad-name, help: H, counter: {value: "1"}}`,
			"metric name is invalid: names may only contain alphanumeric characters or '_'"},
		{"a label key with a dash", "", `{name: m, help: H, labels: [{key: a-b, value: v}], counter: {value: "1"}}`,
			"metric label 'a-b' is invalid: keys may only contain alphanumeric characters or '_'"},
		{"a help that differs from the one already emitted", `{name: m, help: H, counter: {value: "1"}}`, `{name: m, help: Other, counter: {value: "1"}}`,
			"Help for metric m is already set to H, it cannot be changed"},
		{"a type that differs from the one already emitted", `{name: m, help: H, counter: {value: "1"}}`, `{name: m, help: H, gauge: {value: "1"}}`,
			"Found existing Counter for custom metric m of type Gauge"},
		{"a value that is not a number", "", `{name: m, help: H, counter: {value: "many"}}`,
			`parsing the value of metric m: strconv.ParseFloat: parsing "many": invalid syntax`},
		{"a name the controller's own argo metrics use", "", `{name: queue_latency_count, help: H, gauge: {value: "1"}}`,
			"metric argo_workflows_queue_latency_count is one of the controller's own metrics; a custom metric cannot use its name"},
		{"a histogram whose _count series the controller's own argo metrics use", "", `{name: queue_latency, help: H, histogram: {value: "1", buckets: [1]}}`,
			"metric argo_workflows_queue_latency_count is one of the controller's own metrics; a custom metric cannot use its name"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			r, err := NewRegistry(prometheus.NewRegistry(), time.Now)
			if err != nil {
				t.Fatal(err)
			}
			r.Reserve("argo_workflows_queue_latency_count")
			if tc.first != "" {
				if err := r.Emit(Emission{Metric: *def(t, tc.first)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Check(Emission{Metric: *def(t, tc.def)}); err == nil || err.Error() != tc.want {
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestResolveKeepsWhatArgoEmitsAndReportsWhatItCannot(t *testing.T) {
	when := func(s string) (bool, error) { return s == "" || s == "Succeeded == Succeeded", nil }
	for _, tc := range []struct {
		sentence     string
		def          string
		realtimeOnly bool
		emitted      int
		problem      string
	}{
		{"a when that holds emits", `{name: m, help: H, when: "{{status}} == Succeeded", counter: {value: "1"}}`, false, 1, ""},
		{"a when that does not hold emits nothing", `{name: m, help: H, when: "{{status}} == Failed", counter: {value: "1"}}`, false, 0, ""},
		{"a node that just started emits only its realtime gauges", `{name: m, help: H, counter: {value: "1"}}`, true, 0, ""},
		{"a missing help is argo's message", `{name: m, counter: {value: "1"}}`, false, 0,
			"metric 'm' must contain a help string under 'help: ' field"},
		{"a realtime value that is not a variable is argo's message", `{name: m, help: H, gauge: {realtime: true, value: "5"}}`, false, 0,
			"real time metrics can only be used with metric variables"},
		{"a realtime variable without a span is argo's message", `{name: m, help: H, gauge: {realtime: true, value: "{{status}}"}}`, false, 0,
			"'status' is not available as a real time metric"},
		{"an unresolved variable is argo's message", `{name: m, help: H, counter: {value: "{{outputs.parameters.none}}"}}`, false, 0,
			"unable to substitute parameters for metric 'm': failed to resolve {{outputs.parameters.none}}"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			sc := Scope{Vars: map[string]string{"status": "Succeeded"}, Spans: map[string]Span{VarDuration: {Start: start}}}
			ems, problems := Resolver{When: when}.Resolve([]*wfv1.Prometheus{def(t, tc.def)}, sc, "uid", tc.realtimeOnly)
			if len(ems) != tc.emitted {
				t.Errorf("%d emissions, want %d", len(ems), tc.emitted)
			}
			if got := strings.Join(problems, "; "); got != tc.problem {
				t.Errorf("problems %q, want %q", got, tc.problem)
			}
		})
	}
}

// Package monitoring_test keeps config/monitoring (alerts, dashboard) in step with the metrics the code
// registers and with docs/runbook.md.
package monitoring_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const root = "../.."

// metric is one registered metric: its kind (CounterOpts, GaugeOpts, …) and label names.
type metric struct {
	opts   string
	labels map[string]bool
}

// registered finds every metric the module's code defines: each prometheus.*Opts literal with a Name,
// and the label names of the New*Vec call it is passed to.
func registered(t *testing.T) map[string]metric {
	t.Helper()
	out := map[string]metric{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "hack", "test", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			opts, name := optsName(call.Args[0])
			if name == "" {
				return true
			}
			m := metric{opts: opts, labels: map[string]bool{}}
			if len(call.Args) > 1 {
				if labels, ok := call.Args[1].(*ast.CompositeLit); ok {
					for _, l := range labels.Elts {
						if s, ok := stringLit(l); ok {
							m.labels[s] = true
						}
					}
				}
			}
			out[name] = m
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metrics in the code: %v", len(out), out)
	}
	return out
}

// optsName reads a prometheus.XxxOpts{Name: "..."} literal.
func optsName(e ast.Expr) (string, string) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return "", ""
	}
	sel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
		return "", ""
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
		return "", ""
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
			if s, ok := stringLit(kv.Value); ok {
				return sel.Sel.Name, s
			}
		}
	}
	return "", ""
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// expr is one PromQL expression and where it comes from.
type expr struct{ where, promql string }

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Annotations map[string]string `json:"annotations"`
}

func alerts(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Kind != "PrometheusRule" {
		t.Fatalf("kind %q", pr.Kind)
	}
	var out []rule
	for _, g := range pr.Spec.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

func dashboardExprs(t *testing.T) []expr {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config", "monitoring", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var out []expr
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, expr{"dashboard panel " + strconv.Quote(p.Title), tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	return out
}

type panel struct {
	Title   string                  `json:"title"`
	Targets []struct{ Expr string } `json:"targets"`
	Panels  []panel                 `json:"panels"`
}

var (
	metricName = regexp.MustCompile(`\bwfguard_[a-z0-9_]+`)
	// selector is a metric with a label matcher block, e.g. wfguard_x{a="b", c=~"d"}.
	selector     = regexp.MustCompile(`\b(wfguard_[a-z0-9_]+)\{([^}]*)\}`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
)

// base strips the series suffixes of histograms and summaries.
func base(name string, known map[string]metric) string {
	if _, ok := known[name]; ok {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suffix); ok {
			if m, ok := known[b]; ok && (m.opts == "HistogramOpts" || m.opts == "SummaryOpts") {
				return b
			}
		}
	}
	return name
}

func TestAlertsAndDashboardUseOnlyMetricsAndLabelsTheCodeRegisters(t *testing.T) {
	known := registered(t)
	var all []expr
	for _, r := range alerts(t) {
		all = append(all, expr{"alert " + r.Alert, r.Expr})
	}
	all = append(all, dashboardExprs(t)...)
	if len(all) < 10 {
		t.Fatalf("only %d expressions found", len(all))
	}
	used := map[string]bool{}
	for _, e := range all {
		names := metricName.FindAllString(e.promql, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q uses no wfguard metric", e.where, e.promql)
		}
		for _, n := range names {
			b := base(n, known)
			if _, ok := known[b]; !ok {
				t.Errorf("%s uses %s, which no code registers", e.where, n)
			}
			used[b] = true
		}
		for _, sel := range selector.FindAllStringSubmatch(e.promql, -1) {
			m, ok := known[base(sel[1], known)]
			if !ok {
				continue
			}
			for _, l := range matcherLabel.FindAllStringSubmatch(sel[2], -1) {
				if l[1] != "le" && !m.labels[l[1]] {
					t.Errorf("%s selects label %q of %s, which has labels %v", e.where, l[1], sel[1], keys(m.labels))
				}
			}
		}
		for _, by := range regexp.MustCompile(`by \(([^)]*)\)`).FindAllStringSubmatch(e.promql, -1) {
			for _, l := range strings.Split(by[1], ",") {
				if l = strings.TrimSpace(l); l != "le" && !labelOfAny(l, names, known) {
					t.Errorf("%s groups by %q, a label none of %v has", e.where, l, names)
				}
			}
		}
	}
	// The alerts the runbook promises.
	for _, m := range []string{"wfguard_taskresult_waiting_nodes", "wfguard_taskresult_timeouts_total", "wfguard_pods_holding_finalizer",
		"wfguard_finalizer_released_before_persist_total"} {
		if !used[m] {
			t.Errorf("no alert or panel uses %s", m)
		}
	}
}

func labelOfAny(label string, names []string, known map[string]metric) bool {
	for _, n := range names {
		if known[base(n, known)].labels[label] {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestEveryAlertLinksARunbookSectionThatExists(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			anchors[strings.ToLower(strings.Trim(h, "` "))] = true
		}
	}
	for _, r := range alerts(t) {
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, "https://github.com/wfguard/wfguard/blob/main/docs/runbook.md#")
		if !ok || anchor != strings.ToLower(r.Alert) {
			t.Errorf("alert %s: runbook_url %q should end in docs/runbook.md#%s", r.Alert, url, strings.ToLower(r.Alert))
			continue
		}
		if !anchors[anchor] {
			t.Errorf("alert %s: docs/runbook.md has no section \"### %s\"", r.Alert, r.Alert)
		}
	}
}

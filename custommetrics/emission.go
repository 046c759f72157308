package custommetrics

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/template"

	_ "github.com/wfguard/wfguard/exprlimits" // bounds what every expression's functions may cost (docs/engine.md)
)

// Realtime variables: the only values a realtime gauge may take, as in argo.
const (
	VarDuration         = "duration"
	VarWorkflowDuration = "workflow.duration"
)

// Span is the time a realtime gauge measures: from Start to End, or to the scrape while End is zero.
type Span struct {
	Start, End time.Time
}

// seconds is the span's length at now.
func (s Span) seconds(now time.Time) float64 {
	end := s.End
	if end.IsZero() {
		end = now
	}
	if s.Start.IsZero() {
		return 0
	}
	return end.Sub(s.Start).Seconds()
}

// Emission is one metric definition after substitution, ready to be recorded: Metric holds the substituted
// name, help, labels and value; a realtime gauge carries the Span its value follows instead.
type Emission struct {
	Metric wfv1.Prometheus
	// OwnerUID is the workflow the emission comes from (for logs).
	OwnerUID string
	Span     *Span
}

// Scope is what a definition's {{...}} tags resolve from: Vars for every field, Spans for a realtime value.
type Scope struct {
	Vars  map[string]string
	Spans map[string]Span
}

// Resolver turns a list of definitions into emissions as argo's computeMetrics does.
type Resolver struct {
	// When evaluates a substituted `when` (the engine's evaluator, argo's rules).
	When func(string) (bool, error)
}

// Resolve substitutes each definition in sc and keeps those whose `when` holds. realtimeOnly keeps only
// realtime gauges (a node or workflow just started). A definition that cannot be resolved is skipped with
// argo's message in problems; argo records those on the workflow and carries on.
func (r Resolver) Resolve(defs []*wfv1.Prometheus, sc Scope, ownerUID string, realtimeOnly bool) (out []Emission, problems []string) {
	for _, def := range defs {
		if def == nil || realtimeOnly && !def.IsRealtime() {
			continue
		}
		em, ok, err := r.resolveOne(def, sc)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case ok:
			em.OwnerUID = ownerUID
			out = append(out, em)
		}
	}
	return out, problems
}

// resolveOne is one definition: ok is false when its `when` is false.
func (r Resolver) resolveOne(def *wfv1.Prometheus, sc Scope) (Emission, bool, error) {
	if def.Help == "" {
		return Emission{}, false, fmt.Errorf("metric '%s' must contain a help string under 'help: ' field", def.Name)
	}
	// Value fields are substituted apart: a realtime value is a variable, not its current text.
	subst, err := substituteJSON(def, sc.Vars)
	if err != nil {
		return Emission{}, false, fmt.Errorf("unable to substitute parameters for metric '%s': %s", def.Name, err)
	}
	m := *def.DeepCopy()
	m.Name, m.Help, m.Labels, m.When = subst.Name, subst.Help, subst.Labels, subst.When
	if r.When != nil {
		proceed, err := r.When(m.When)
		if err != nil {
			// argo names the workflow here (a slip); the metric is what the user must fix
			return Emission{}, false, fmt.Errorf("unable to compute 'when' clause for metric '%s': %s", m.Name, err)
		}
		if !proceed {
			return Emission{}, false, nil
		}
	}
	if m.IsRealtime() {
		span, err := realtimeSpan(m.Gauge.Value, sc.Spans)
		return Emission{Metric: m, Span: span}, err == nil, err
	}
	value, err := template.Replace(jsonString(m.GetValueString()), sc.Vars, false)
	if err == nil {
		err = json.Unmarshal([]byte(value), &value)
	}
	if err != nil {
		return Emission{}, false, fmt.Errorf("unable to substitute parameters for metric '%s': %s", m.Name, err)
	}
	m.SetValueString(value)
	return Emission{Metric: m}, true, nil
}

// realtimeSpan is the span a realtime gauge's value ({{duration}} or {{workflow.duration}}) follows.
func realtimeSpan(value string, spans map[string]Span) (*Span, error) {
	if !strings.HasPrefix(value, "{{") || !strings.HasSuffix(value, "}}") {
		return nil, fmt.Errorf("real time metrics can only be used with metric variables")
	}
	name := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(value, "{{"), "}}"))
	span, ok := spans[name]
	if !ok {
		return nil, fmt.Errorf("'%s' is not available as a real time metric", name)
	}
	return &span, nil
}

// substituteJSON replaces the tags of the whole definition, unresolved tags being an error as in argo.
func substituteJSON(def *wfv1.Prometheus, vars map[string]string) (*wfv1.Prometheus, error) {
	data, err := json.Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	replaced, err := template.Replace(string(data), vars, false)
	if err != nil {
		return nil, err
	}
	var out wfv1.Prometheus
	if err := json.Unmarshal([]byte(replaced), &out); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return &out, nil
}

// jsonString is s as a JSON string literal, so substituted values are escaped.
func jsonString(s string) string {
	data, _ := json.Marshal(s) // a string always encodes
	return string(data)
}

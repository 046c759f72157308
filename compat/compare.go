package compat

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wfguard/wfguard/internal/truncate"
)

// Verdict compares one case under both controllers.
type Verdict struct {
	Case   string      `json:"case"`
	Source string      `json:"source"`
	Argo   Observation `json:"argo"`
	WFG    Observation `json:"wfguard"`
	// Same: the same phase, message class, node tree and outputs.
	Same bool `json:"same"`
	// Rejected: wfguard refused the case as unsupported (counted as a miss).
	Rejected bool `json:"rejected,omitempty"`
	// Diffs are the outcome differences; PodDiffs the unexplained pod differences, per node.
	Diffs    []string `json:"diffs,omitempty"`
	PodDiffs []string `json:"podDiffs,omitempty"`
	// Explained are pod differences wfguard makes on purpose (ExplainedPodDifferences).
	Explained []string `json:"explained,omitempty"`
	// StatusDiffs are the differences in the status argo writes for its clients (progress, resource
	// names, estimate, conditions): argo get's view, beside the outcome.
	StatusDiffs []string `json:"statusDiffs,omitempty"`
}

// ExplainedPodDifferences are pod fields where wfguard differs from argo on purpose, with the reason
// (docs/compatibility.md repeats them). Keys are matched as prefixes of the flattened pod path.
var ExplainedPodDifferences = map[string]string{
	"finalizers": "wfguard adds workflows.argoproj.io/status by default (--pod-status-finalizer); argo only with ARGO_POD_STATUS_CAPTURE_FINALIZER=true",
	"annotations.wfguard.io/status-finalizer":         "wfguard marks the pods it gave its status finalizer, so it releases only its own (argo ignores the annotation)",
	"containers.init:init.env.ARGO_TEMPLATE.metrics.": "argo writes the metric labels and conditions it computed when an attempt of a retry ended into the retry's template (its computeMetrics changes the template in place), so later attempts' pods carry them substituted; argoexec never reads a template's metrics",
	"labels.wfguard.io/workflow-uid":                  "wfguard labels each pod with its workflow's UID, so a pod of a deleted and re-created namesake is never taken for the new one's (argo ignores the label)",
}

// messageClasses turn a workflow message into a class: the wording may differ, the reason may not.
var messageClasses = []struct {
	class string
	re    *regexp.Regexp
}{
	{"unsupported", regexp.MustCompile(`not supported by wfguard`)},
	{"child-failed", regexp.MustCompile(`(?i)child .* (failed|errored)`)},
	{"deadline", regexp.MustCompile(`(?i)deadline|timeout|timed out`)},
	{"stopped", regexp.MustCompile(`(?i)stopped|terminated|shutdown`)},
	{"invalid", regexp.MustCompile(`(?i)invalid|validat|malformed|unable to resolve|failed to resolve|not found`)},
	{"exit-code", regexp.MustCompile(`(?i)exit code|exited with`)},
}

// MessageClass is the class of a workflow's message ("" for none, "other" for one no class matches).
func MessageClass(m string) string {
	if m == "" {
		return ""
	}
	for _, c := range messageClasses {
		if c.re.MatchString(m) {
			return c.class
		}
	}
	return "other"
}

// Compare compares the observations of one case.
func Compare(argo, wfg Observation) Verdict {
	v := Verdict{Case: argo.Case, Source: argo.Source, Argo: argo, WFG: wfg}
	add := func(format string, args ...any) { v.Diffs = append(v.Diffs, fmt.Sprintf(format, args...)) }
	v.Rejected = MessageClass(wfg.Message) == "unsupported" || (wfg.Refused != "" && argo.Refused == "")
	if (argo.Refused == "") != (wfg.Refused == "") {
		add("create refused: argo %q, wfguard %q", argo.Refused, wfg.Refused)
	}
	if argo.Phase != wfg.Phase {
		add("phase: argo %s, wfguard %s", orNone(argo.Phase), orNone(wfg.Phase))
	}
	if a, w := MessageClass(argo.Message), MessageClass(wfg.Message); a != w {
		add("message: argo %q, wfguard %q", argo.Message, wfg.Message)
	}
	diffMaps("node", argo.Nodes, wfg.Nodes, add)
	for _, name := range slices.Sorted(maps.Keys(argo.NodeIDs)) {
		// A node missing on one side is already a node difference.
		if a, w := argo.NodeIDs[name], wfg.NodeIDs[name]; w != "" && w != a {
			add("node ID of %s: argo %q, wfguard %q", name, a, w)
		}
	}
	for _, name := range unionKeys(argo.Outputs, wfg.Outputs) {
		diffMaps("outputs of "+name, argo.Outputs[name], wfg.Outputs[name], add)
	}
	v.Same = len(v.Diffs) == 0 && !v.Rejected
	diffMaps("status", argo.Status, wfg.Status, func(format string, args ...any) {
		v.StatusDiffs = append(v.StatusDiffs, fmt.Sprintf(format, args...))
	})
	for _, name := range unionKeys(argo.Pods, wfg.Pods) {
		a, w := argo.Pods[name], wfg.Pods[name]
		if a == nil || w == nil {
			continue // the node tree diff already says a pod's node is missing
		}
		diffMaps("pod of "+name, withinASecond(a, w), w, func(format string, args ...any) {
			d := fmt.Sprintf(format, args...)
			field := strings.TrimPrefix(d, "pod of "+name+": ")
			for prefix := range ExplainedPodDifferences {
				if strings.HasPrefix(field, prefix) {
					v.Explained = appendOnce(v.Explained, prefix)
					return
				}
			}
			v.PodDiffs = append(v.PodDiffs, d)
		})
	}
	return v
}

func diffMaps(what string, a, w map[string]string, add func(string, ...any)) {
	for _, k := range unionKeys(a, w) {
		av, aok := a[k]
		wv, wok := w[k]
		switch {
		case aok && !wok:
			add("%s: %s: argo %q, wfguard none", what, k, clip(av))
		case !aok && wok:
			add("%s: %s: argo none, wfguard %q", what, k, clip(wv))
		case av != wv:
			add("%s: %s: argo %q, wfguard %q", what, k, clip(av), clip(wv))
		}
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func appendOnce(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// clip keeps a report's values readable (cut on a rune boundary, saying how much was cut).
func clip(s string) string { return truncate.String(s, 117) }

// clockFields are pod fields a controller derives from the wall clock when it creates the pod (the seconds
// left of a deadline): a difference of one second is the two runs' clocks, not a behaviour.
var clockFields = []string{"spec.activeDeadlineSeconds"}

// withinASecond returns a with each clock field set to w's where the two differ by at most one.
func withinASecond(a, w map[string]string) map[string]string {
	out := a
	for _, k := range clockFields {
		av, aerr := strconv.Atoi(a[k])
		wv, werr := strconv.Atoi(w[k])
		if aerr == nil && werr == nil && av != wv && av-wv <= 1 && wv-av <= 1 {
			out = maps.Clone(a)
			out[k] = w[k]
		}
	}
	return out
}

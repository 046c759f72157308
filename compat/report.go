package compat

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
)

// Report is the differential suite's result, as written to JSON.
type Report struct {
	ArgoVersion string    `json:"argoVersion"`
	Cases       int       `json:"cases"`
	Same        int       `json:"same"`
	Rejected    int       `json:"rejected"`
	PodDiffs    int       `json:"casesWithPodDiffs"`
	StatusDiffs int       `json:"casesWithStatusDiffs"`
	Skipped     []Skipped `json:"skipped,omitempty"`
	// Origins counts the same figures per corpus.
	Origins  map[Origin]Tally `json:"origins"`
	Verdicts []Verdict        `json:"verdicts"`
}

// Tally is what a report counts for one corpus.
type Tally struct {
	Cases    int `json:"cases"`
	Same     int `json:"same"`
	Rejected int `json:"rejected"`
	PodDiffs int `json:"casesWithPodDiffs"`
	// StatusDiffs counts the cases whose client status (Verdict.StatusDiffs) differs.
	StatusDiffs int `json:"casesWithStatusDiffs"`
}

func (t *Tally) add(v Verdict) {
	t.Cases++
	if v.Same {
		t.Same++
	}
	if v.Rejected {
		t.Rejected++
	}
	if len(v.PodDiffs) > 0 {
		t.PodDiffs++
	}
	if len(v.StatusDiffs) > 0 {
		t.StatusDiffs++
	}
}

func (t Tally) percent() float64 {
	if t.Cases == 0 {
		return 0
	}
	return 100 * float64(t.Same) / float64(t.Cases)
}

// NewReport compares the observations of the same corpus under both controllers (in the same order).
func NewReport(version string, c *Corpus, argo, wfg []Observation) (*Report, error) {
	if len(argo) != len(wfg) {
		return nil, fmt.Errorf("comparing runs: %d observations under argo, %d under wfguard", len(argo), len(wfg))
	}
	if len(argo) != len(c.Cases) {
		return nil, fmt.Errorf("comparing runs: %d observations of %d cases", len(argo), len(c.Cases))
	}
	r := &Report{ArgoVersion: version, Skipped: c.Skipped, Origins: map[Origin]Tally{}}
	var all Tally
	for i := range argo {
		v := Compare(argo[i], wfg[i])
		all.add(v)
		t := r.Origins[c.Cases[i].Origin]
		t.add(v)
		r.Origins[c.Cases[i].Origin] = t
		r.Verdicts = append(r.Verdicts, v)
	}
	r.Cases, r.Same, r.Rejected, r.PodDiffs, r.StatusDiffs = all.Cases, all.Same, all.Rejected, all.PodDiffs, all.StatusDiffs
	return r, nil
}

// Percent is the share of argo's examples with the same outcome: the bar. A run of the own corpus
// alone has no such share and reports its overall one.
func (r *Report) Percent() float64 {
	if t, ok := r.Origins[OriginArgoExamples]; ok {
		return t.percent()
	}
	return Tally{Cases: r.Cases, Same: r.Same}.percent()
}

// WriteTable prints one row per case and a summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tARGO\tWFGUARD\tOUTCOME\tPOD DIFFS\tSTATUS DIFFS\tFIRST DIFFERENCE")
	for _, v := range r.Verdicts {
		outcome := "same"
		switch {
		case v.Rejected:
			outcome = "rejected"
		case !v.Same:
			outcome = "differs"
		}
		first := ""
		if len(v.Diffs) > 0 {
			first = clip(v.Diffs[0])
		} else if len(v.PodDiffs) > 0 {
			first = clip(v.PodDiffs[0])
		} else if len(v.StatusDiffs) > 0 {
			first = clip(v.StatusDiffs[0])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", v.Case, phaseOf(v.Argo), phaseOf(v.WFG), outcome, len(v.PodDiffs), len(v.StatusDiffs), first)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, o := range slices.Sorted(maps.Keys(r.Origins)) {
		t := r.Origins[o]
		fmt.Fprintf(w, "%s: same outcome: %d of %d (%.1f%%); rejected by wfguard: %d; cases with unexplained pod differences: %d; with client status differences: %d\n",
			o, t.Same, t.Cases, t.percent(), t.Rejected, t.PodDiffs, t.StatusDiffs)
	}
	_, err := fmt.Fprintf(w, "skipped documents: %d\n", len(r.Skipped))
	return err
}

func phaseOf(o Observation) string {
	switch {
	case o.Refused != "":
		return "Refused"
	case o.TimedOut:
		return orNone(o.Phase) + "(timeout)"
	}
	return orNone(o.Phase)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

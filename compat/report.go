package compat

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Report is the differential suite's result, as written to JSON.
type Report struct {
	ArgoVersion string    `json:"argoVersion"`
	Cases       int       `json:"cases"`
	Same        int       `json:"same"`
	Rejected    int       `json:"rejected"`
	PodDiffs    int       `json:"casesWithPodDiffs"`
	Skipped     []Skipped `json:"skipped,omitempty"`
	Verdicts    []Verdict `json:"verdicts"`
}

// NewReport compares the observations of the same corpus under both controllers (in the same order).
func NewReport(version string, c *Corpus, argo, wfg []Observation) (*Report, error) {
	if len(argo) != len(wfg) {
		return nil, fmt.Errorf("comparing runs: %d observations under argo, %d under wfguard", len(argo), len(wfg))
	}
	r := &Report{ArgoVersion: version, Cases: len(argo), Skipped: c.Skipped}
	for i := range argo {
		v := Compare(argo[i], wfg[i])
		if v.Same {
			r.Same++
		}
		if v.Rejected {
			r.Rejected++
		}
		if len(v.PodDiffs) > 0 {
			r.PodDiffs++
		}
		r.Verdicts = append(r.Verdicts, v)
	}
	return r, nil
}

// Percent is the share of cases with the same outcome.
func (r *Report) Percent() float64 {
	if r.Cases == 0 {
		return 0
	}
	return 100 * float64(r.Same) / float64(r.Cases)
}

// WriteTable prints one row per case and a summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tARGO\tWFGUARD\tOUTCOME\tPOD DIFFS\tFIRST DIFFERENCE")
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
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", v.Case, phaseOf(v.Argo), phaseOf(v.WFG), outcome, len(v.PodDiffs), first)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nsame outcome: %d of %d (%.1f%%); rejected by wfguard: %d; cases with unexplained pod differences: %d; skipped documents: %d\n",
		r.Same, r.Cases, r.Percent(), r.Rejected, r.PodDiffs, len(r.Skipped))
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

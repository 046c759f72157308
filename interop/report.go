package interop

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is one step of one scenario in one mode, under both controllers.
type Row struct {
	Scenario string
	Mode     Mode
	Step     string
	Argo     Result
	WFGuard  Result
	// Diff is the first difference, empty when the step went the same.
	Diff string
	// Deliberate is set when docs/compatibility.md lists the step as a deliberate difference.
	Deliberate bool
}

// ID names the row as docs/compatibility.md's list of deliberate differences does: scenario/mode/step.
func (r Row) ID() string { return r.Scenario + "/" + string(r.Mode) + "/" + r.Step }

// Same reports whether the step went the same under both controllers.
func (r Row) Same() bool { return r.Diff == "" }

// Compare pairs one scenario's results under argo and wfguard, step by step.
func Compare(scenario string, mode Mode, argo, wfg []Result) []Row {
	var rows []Row
	for i := range max(len(argo), len(wfg)) {
		var a, w Result
		if i < len(argo) {
			a = argo[i]
		}
		if i < len(wfg) {
			w = wfg[i]
		}
		step := a.Step
		if step == "" {
			step = w.Step
		}
		rows = append(rows, Row{Scenario: scenario, Mode: mode, Step: step, Argo: a, WFGuard: w, Diff: firstDifference(a, w)})
	}
	return rows
}

// firstDifference describes the first way a and w differ, or returns "".
func firstDifference(a, w Result) string {
	switch {
	case a.Note != w.Note:
		return fmt.Sprintf("argo: %s; wfguard: %s", orNone(a.Note), orNone(w.Note))
	case a.Exit != w.Exit:
		return fmt.Sprintf("exit code: argo %d, wfguard %d", a.Exit, w.Exit)
	}
	onlyA, onlyW := without(a.Lines, w.Lines), without(w.Lines, a.Lines)
	switch {
	case slices.Equal(a.Lines, w.Lines):
		return ""
	case len(onlyA) == 0 && len(onlyW) == 0:
		return "the same lines in another order"
	case len(onlyA) == 0:
		return fmt.Sprintf("only wfguard: %s (+%d more)", onlyW[0], len(onlyW)-1)
	case len(onlyW) == 0:
		return fmt.Sprintf("only argo: %s (+%d more)", onlyA[0], len(onlyA)-1)
	}
	return fmt.Sprintf("argo: %s; wfguard: %s (%d and %d lines differ)", onlyA[0], onlyW[0], len(onlyA), len(onlyW))
}

// without is the lines of a that b lacks, in a's order, counting repeats.
func without(a, b []string) []string {
	left := map[string]int{}
	for _, l := range b {
		left[l]++
	}
	var out []string
	for _, l := range a {
		if left[l] > 0 {
			left[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "ok"
	}
	return s
}

// deliberateLine is an entry of docs/compatibility.md's "Deliberate interop differences" list:
// "- `scenario/mode/step`: why".
var deliberateLine = regexp.MustCompile("^- `([^`]+)`")

// Deliberate reads the ids listed under the heading "### Deliberate interop differences" of doc.
func Deliberate(doc string) map[string]bool {
	ids := map[string]bool{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == "Deliberate interop differences"
		case in:
			if m := deliberateLine.FindStringSubmatch(line); m != nil {
				ids[m[1]] = true
			}
		}
	}
	return ids
}

// WriteTable prints one row per step and a summary.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMODE\tSTEP\tARGO\tWFGUARD\tOUTCOME\tFIRST DIFFERENCE")
	same, deliberate := 0, 0
	for _, r := range rows {
		outcome := "same"
		switch {
		case r.Same():
			same++
		case r.Deliberate:
			outcome = "deliberate"
			deliberate++
		default:
			outcome = "differs"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Mode, r.Step, summary(r.Argo), summary(r.WFGuard),
			outcome, clip(r.Diff, 160))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nsteps: %d; same: %d; deliberate differences: %d; differ: %d\n", len(rows), same, deliberate,
		len(rows)-same-deliberate)
	return err
}

func summary(r Result) string {
	if r.Note != "" {
		return fmt.Sprintf("exit %d (!)", r.Exit)
	}
	return fmt.Sprintf("exit %d", r.Exit)
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}

// WriteDifferences prints, for each step that differs, every line only one controller gave.
func WriteDifferences(w io.Writer, rows []Row) error {
	for _, r := range rows {
		if r.Same() {
			continue
		}
		fmt.Fprintf(w, "== %s\n   %s\n", r.ID(), r.Diff)
		for _, l := range without(r.Argo.Lines, r.WFGuard.Lines) {
			fmt.Fprintf(w, "   argo    | %s\n", l)
		}
		for _, l := range without(r.WFGuard.Lines, r.Argo.Lines) {
			fmt.Fprintf(w, "   wfguard | %s\n", l)
		}
	}
	return nil
}

// SetAside returns the row compared again without the lines set matches, under both controllers: what a
// comparison leaves out, named by its caller.
func (r Row) SetAside(set *regexp.Regexp) Row {
	drop := func(res Result) Result {
		res.Lines = slices.DeleteFunc(slices.Clone(res.Lines), set.MatchString)
		return res
	}
	r.Argo, r.WFGuard = drop(r.Argo), drop(r.WFGuard)
	r.Diff = firstDifference(r.Argo, r.WFGuard)
	return r
}

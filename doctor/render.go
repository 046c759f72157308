package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/wfguard/wfguard/explain"
)

// Result is a report with the outcome of its repairs, as doctor prints it.
type Result struct {
	Report
	// Fix is nil without --fix; DryRun says whether the outcomes were only planned.
	Fix    []Outcome `json:"fix,omitempty"`
	DryRun bool      `json:"dryRun,omitempty"`
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteHuman writes one block per check (ok, its problems, or what it skipped), the repairs, and a
// summary line.
func WriteHuman(w io.Writer, r Result) error {
	p := &printer{w: w}
	scope := "all namespaces"
	if r.Namespace != "" {
		scope = "namespace " + r.Namespace
	}
	p.f("wfguard doctor: %s at %s\n", scope, r.Now.UTC().Format(time.RFC3339))
	repairable := 0
	for _, c := range r.Checks {
		repairable += p.check(c, r.Now)
	}
	if r.Fix != nil {
		p.repairs(r.Fix, r.DryRun)
	}
	p.f("\n%s\n", summary(r.Report, repairable))
	return p.err
}

// check writes a check's block: its status, its findings with their repairs, what it skipped. It returns
// how many findings have a repair.
func (p *printer) check(c CheckResult, now time.Time) int {
	p.f("\n%s: %s\n", c.Name, checkStatus(c))
	repairable := 0
	for _, f := range c.Findings {
		p.f("  %s: %s", findingPlace(f), f.Message)
		if !f.Since.IsZero() {
			p.f(" (since %s, %s)", f.Since.UTC().Format(time.RFC3339), explain.Ago(now, f.Since))
		}
		p.f("\n")
		if f.Repair != nil {
			repairable++
			p.f("    repair: %s\n", f.Repair.Describe())
		}
	}
	for _, s := range c.Skipped {
		p.f("  skipped: %s\n", s)
	}
	return repairable
}

func checkStatus(c CheckResult) string {
	switch {
	case len(c.Findings) == 1:
		return "1 problem"
	case len(c.Findings) > 1:
		return fmt.Sprintf("%d problems", len(c.Findings))
	case len(c.Skipped) > 0:
		return "not checked"
	}
	return "ok"
}

// findingPlace names what a finding is about: the object, its namespace, and its workflow unless the
// object is the workflow.
func findingPlace(f Finding) string {
	where := f.Object
	if f.Namespace != "" {
		where = f.Namespace + " " + where
	}
	if f.Workflow != "" && f.Object != "workflow/"+f.Workflow {
		where += " of workflow " + f.Workflow
	}
	return where
}

// repairs writes the repairs' block: what a dry run would do, or what each repair did.
func (p *printer) repairs(fix []Outcome, dryRun bool) {
	title := "Repairs"
	if dryRun {
		title = "Repairs (dry run: nothing changed; add --yes to apply)"
	}
	p.f("\n%s:\n", title)
	if len(fix) == 0 {
		p.f("  none: no problem has a safe automatic repair\n")
	}
	for _, o := range fix {
		switch {
		case dryRun:
			p.f("  would %s\n", o.Repair.Describe())
		case o.Applied && o.Error != "":
			p.f("  done: %s; but %s\n", o.Repair.Describe(), o.Error)
		case o.Applied:
			p.f("  done: %s\n", o.Repair.Describe())
		case o.Error != "":
			p.f("  failed: %s: %s\n", o.Repair.Describe(), o.Error)
		default:
			p.f("  not needed: %s: %s\n", o.Repair.Describe(), o.Note)
		}
	}
}

func summary(r Report, repairable int) string {
	s := "no problems found"
	switch n := r.Problems(); {
	case n == 1:
		s = "1 problem found"
	case n > 1:
		s = fmt.Sprintf("%d problems found", n)
	}
	if repairable > 0 {
		s += fmt.Sprintf(" (%d with a safe repair: doctor --fix)", repairable)
	}
	if k := r.Skipped(); k > 0 {
		s += fmt.Sprintf("; %d of %d checks incomplete (see skipped)", k, len(r.Checks))
	}
	return s
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// Exit codes of wfguard doctor.
const (
	ExitClean      = 0
	ExitProblems   = 1
	ExitIncomplete = 3
)

// ExitCode is 1 while problems remain (a repair applied removes its problem), else 3 if a check could
// not run, else 0.
func ExitCode(r Result) int {
	left := r.Problems()
	if !r.DryRun {
		for _, o := range r.Fix {
			if o.Applied {
				left--
			}
		}
	}
	switch {
	case left > 0:
		return ExitProblems
	case r.Skipped() > 0:
		return ExitIncomplete
	}
	return ExitClean
}

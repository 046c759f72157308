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
		status := "ok"
		switch {
		case len(c.Findings) == 1:
			status = "1 problem"
		case len(c.Findings) > 1:
			status = fmt.Sprintf("%d problems", len(c.Findings))
		case len(c.Skipped) > 0:
			status = "not checked"
		}
		p.f("\n%s: %s\n", c.Name, status)
		for _, f := range c.Findings {
			where := f.Object
			if f.Namespace != "" {
				where = f.Namespace + " " + where
			}
			if f.Workflow != "" && f.Object != "workflow/"+f.Workflow {
				where += " of workflow " + f.Workflow
			}
			p.f("  %s: %s", where, f.Message)
			if !f.Since.IsZero() {
				p.f(" (since %s, %s)", f.Since.UTC().Format(time.RFC3339), explain.Ago(r.Now, f.Since))
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
	}
	if r.Fix != nil {
		title := "Repairs"
		if r.DryRun {
			title = "Repairs (dry run: nothing changed; add --yes to apply)"
		}
		p.f("\n%s:\n", title)
		if len(r.Fix) == 0 {
			p.f("  none: no problem has a safe automatic repair\n")
		}
		for _, o := range r.Fix {
			switch {
			case r.DryRun:
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
	p.f("\n%s\n", summary(r.Report, repairable))
	return p.err
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

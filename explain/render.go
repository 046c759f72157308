package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the tree as indented JSON, for tools.
func WriteJSON(w io.Writer, t Tree) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// WriteHuman writes the tree for a person: the workflow, a node table drawn as a tree, then every wait
// in a sentence, pending actions and what could not be read.
func WriteHuman(w io.Writer, t Tree) error {
	p := &printer{w: w, now: t.Now}
	p.workflow(t)
	p.f("\n")
	if err := writeNodeTable(w, t.Nodes); err != nil {
		return err
	}
	p.waitsAndNotes(t.Nodes)
	p.pendingActions(t.Actions)
	p.notRead(t.Skipped)
	return p.err
}

// workflow writes the workflow's own lines: its phase, message, times, state and what it waits on.
func (p *printer) workflow(t Tree) {
	phase := t.Phase
	if phase == "" {
		phase = "(no phase)"
	}
	p.f("Workflow %s/%s  %s  uid %s\n", t.Namespace, t.Name, phase, t.UID)
	if t.Message != "" {
		p.f("  message: %s\n", t.Message)
	}
	p.f("  created %s", p.at(t.Created))
	if !t.StartedAt.IsZero() {
		p.f(", started %s", p.at(t.StartedAt))
	}
	if !t.FinishedAt.IsZero() {
		p.f(", finished %s", p.at(t.FinishedAt))
	}
	if !t.LastWrite.IsZero() {
		p.f(", last written %s", p.at(t.LastWrite))
	}
	p.f("\n  suspended: %s  shutdown: %s  parallelism: %s\n", yesNo(t.Suspended), orDash(t.Shutdown), orDash(countOrEmpty(t.Parallelism)))
	if t.Wait != nil {
		p.f("  waits on %s\n", p.wait(t.Wait))
	}
}

// writeNodeTable writes a row per node, its name indented as a tree, in aligned columns.
func writeNodeTable(w io.Writer, nodes []Node) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tTYPE\tPHASE\tPOD\tPOD PHASE\tFINALIZER\tRESULT")
	for i, n := range nodes {
		pod, podPhase, fin := "-", "-", "-"
		if n.Pod != nil {
			pod, podPhase, fin = n.Pod.Name, n.Pod.Phase, n.Pod.Finalizer
			if n.Pod.Deleting {
				podPhase += " (deleting)"
			}
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", treePrefix(nodes, i), n.DisplayName, n.Type, orDash(n.Phase), pod, podPhase, fin, orDash(n.Result))
	}
	return tw.Flush()
}

// waitsAndNotes writes every node's wait, then its notes when any node has some.
func (p *printer) waitsAndNotes(nodes []Node) {
	var waits, notes []string
	for _, n := range nodes {
		if n.Wait != nil {
			waits = append(waits, fmt.Sprintf("%s (%s): %s", n.DisplayName, n.ID, p.wait(n.Wait)))
		}
		for _, note := range n.Notes {
			notes = append(notes, fmt.Sprintf("%s (%s): %s", n.DisplayName, n.ID, note))
		}
	}
	p.section("Waits", waits, "nothing: no node waits")
	if len(notes) > 0 {
		p.section("Notes", notes, "")
	}
}

func (p *printer) pendingActions(actions []Action) {
	var lines []string
	for _, a := range actions {
		line := fmt.Sprintf("%s %s, created %s", a.Name, a.Action, p.at(a.Created))
		if a.Recorded {
			line += ": applied and recorded in status.appliedActions; its outcome is still to be written"
		}
		lines = append(lines, line)
	}
	p.section("Pending actions", lines, "none")
}

// notRead writes what could not be read, when anything could not.
func (p *printer) notRead(skipped []string) {
	if len(skipped) == 0 {
		return
	}
	var lines []string
	for _, s := range skipped {
		lines = append(lines, "skipped: "+s)
	}
	p.section("Not read", lines, "")
}

type printer struct {
	w   io.Writer
	now time.Time
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) section(title string, lines []string, empty string) {
	p.f("\n%s:\n", title)
	if len(lines) == 0 {
		p.f("  %s\n", empty)
	}
	for _, l := range lines {
		p.f("  %s\n", l)
	}
}

// at prints a time with its age, e.g. "2026-01-02T03:04:05Z (4m0s ago)".
func (p *printer) at(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), Ago(p.now, t))
}

func (p *printer) wait(w *Wait) string {
	s := w.On
	if !w.Since.IsZero() {
		s += " since " + p.at(w.Since)
	}
	if !w.Until.IsZero() {
		s += ", until " + w.Until.UTC().Format(time.RFC3339)
		if d := w.Until.Sub(p.now); d > 0 {
			s += fmt.Sprintf(" (in %s)", d.Round(time.Second))
		} else {
			s += fmt.Sprintf(" (passed %s ago)", (-d).Round(time.Second))
		}
	}
	return s + ": " + w.Detail
}

// Ago says how long ago t was, to the second ("in 3s" for a time ahead of now, e.g. clock skew).
func Ago(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return fmt.Sprintf("in %s", -d)
	}
	return fmt.Sprintf("%s ago", d)
}

// treePrefix draws the branch of node i: "│  " for ancestors with later siblings, then "├─ " or "└─ ".
func treePrefix(nodes []Node, i int) string {
	depth := nodes[i].Depth
	if depth == 0 {
		return ""
	}
	var b strings.Builder
	for level := 1; level < depth; level++ {
		if hasLaterSibling(nodes, i, level) {
			b.WriteString("│  ")
		} else {
			b.WriteString("   ")
		}
	}
	if hasLaterSibling(nodes, i, depth) {
		b.WriteString("├─ ")
	} else {
		b.WriteString("└─ ")
	}
	return b.String()
}

// hasLaterSibling reports whether, after node i, another node sits at depth level before the walk
// climbs above it.
func hasLaterSibling(nodes []Node, i, level int) bool {
	for j := i + 1; j < len(nodes); j++ {
		switch d := nodes[j].Depth; {
		case d == level:
			return true
		case d < level:
			return false
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countOrEmpty(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

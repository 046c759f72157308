package engine

import (
	"fmt"
	"strings"
	"unicode"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// dependsExpr is a parsed DAG `depends` expression: task results joined by && || ! and parentheses.
type dependsExpr interface {
	eval(state taskState) bool
	tasks(add func(task, result string))
}

type andExpr struct{ l, r dependsExpr }
type orExpr struct{ l, r dependsExpr }
type notExpr struct{ e dependsExpr }

// taskResult is `task` or `task.Result`.
type taskResult struct{ task, result string }

// phaseDaemoned is the state a depends expression sees for a daemoned task (running and ready): argo's
// bare `A` accepts it, as does `A.Daemoned`.
const phaseDaemoned wfv1.NodePhase = "Daemoned"

// taskState gives a task's node phase and its continueOn (which widens what a bare dependency accepts).
type taskState func(task string) (wfv1.NodePhase, *wfv1.ContinueOn)

func (e andExpr) eval(s taskState) bool             { return e.l.eval(s) && e.r.eval(s) }
func (e orExpr) eval(s taskState) bool              { return e.l.eval(s) || e.r.eval(s) }
func (e notExpr) eval(s taskState) bool             { return !e.e.eval(s) }
func (e andExpr) tasks(add func(string, string))    { e.l.tasks(add); e.r.tasks(add) }
func (e orExpr) tasks(add func(string, string))     { e.l.tasks(add); e.r.tasks(add) }
func (e notExpr) tasks(add func(string, string))    { e.e.tasks(add) }
func (t taskResult) tasks(add func(string, string)) { add(t.task, t.result) }

func (t taskResult) eval(state taskState) bool {
	p, continueOn := state(t.task)
	switch t.result {
	case "": // a bare task name means it did not fail, or failed in a way its continueOn accepts
		return p == wfv1.NodeSucceeded || p == wfv1.NodeSkipped || p == phaseDaemoned ||
			(continueOn != nil && (p == wfv1.NodeFailed && continueOn.Failed || p == wfv1.NodeError && continueOn.Error))
	case "Succeeded":
		return p == wfv1.NodeSucceeded
	case "Failed":
		return p == wfv1.NodeFailed
	case "Errored":
		return p == wfv1.NodeError
	case "Skipped":
		return p == wfv1.NodeSkipped
	case "Daemoned":
		return p == phaseDaemoned
	case "Omitted":
		return p == wfv1.NodeOmitted
	case "Completed":
		return p.Completed()
	}
	return false
}

var taskResults = map[string]bool{"Succeeded": true, "Failed": true, "Errored": true, "Skipped": true, "Omitted": true, "Completed": true, "Daemoned": true}

// dependsOf returns the expression of a task: `depends`, else its `dependencies` joined by &&, else nil.
func dependsOf(t *wfv1.DAGTask) (dependsExpr, error) {
	switch {
	case t.Depends != "" && len(t.Dependencies) > 0:
		return nil, fmt.Errorf("task %s uses both depends and dependencies", t.Name)
	case t.Depends != "":
		return parseDepends(t.Depends)
	case len(t.Dependencies) > 0:
		var e dependsExpr
		for _, d := range t.Dependencies {
			tr := taskResult{task: d}
			if e == nil {
				e = tr
			} else {
				e = andExpr{e, tr}
			}
		}
		return e, nil
	}
	return nil, nil
}

// parseDepends parses e.g. `A && (B.Failed || !C.Succeeded)`.
func parseDepends(s string) (dependsExpr, error) {
	p := &dependsParser{src: s, toks: tokenizeDepends(s)}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("depends %q: unexpected %q", s, p.toks[p.pos])
	}
	return e, nil
}

func tokenizeDepends(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.HasPrefix(s[i:], "&&"), strings.HasPrefix(s[i:], "||"):
			toks = append(toks, s[i:i+2])
			i += 2
		case c == '!' || c == '(' || c == ')':
			toks = append(toks, string(c))
			i++
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && !strings.ContainsRune("!()&|", rune(s[j])) {
				j++
			}
			if j == i { // a lone & or |
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

type dependsParser struct {
	src  string
	toks []string
	pos  int
}

func (p *dependsParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *dependsParser) or() (dependsExpr, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek() == "||" {
		p.pos++
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = orExpr{l, r}
	}
	return l, nil
}

func (p *dependsParser) and() (dependsExpr, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.peek() == "&&" {
		p.pos++
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = andExpr{l, r}
	}
	return l, nil
}

func (p *dependsParser) unary() (dependsExpr, error) {
	switch tok := p.peek(); tok {
	case "":
		return nil, fmt.Errorf("depends %q: unexpected end of expression", p.src)
	case "!":
		p.pos++
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notExpr{e}, nil
	case "(":
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("depends %q: missing )", p.src)
		}
		p.pos++
		return e, nil
	case ")", "&&", "||":
		return nil, fmt.Errorf("depends %q: unexpected %q", p.src, tok)
	default:
		p.pos++
		task, result, _ := strings.Cut(tok, ".")
		if task == "" || (result != "" && !taskResults[result]) {
			return nil, fmt.Errorf("depends %q: %q is not a task or task result (want TASK or TASK.Succeeded/Failed/Errored/Skipped/Omitted/Completed/Daemoned)", p.src, tok)
		}
		return taskResult{task: task, result: result}, nil
	}
}

package faultinject

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Action is what one term does when it fires.
type Action struct {
	Kind  string        // off, error, delay, reset
	Code  int           // error: HTTP status
	Delay time.Duration // delay: how long; error 429: Retry-After
}

// Term is one gofail-style term: [N*][P%]action[(arg)]; a rule walks its terms with "->".
type Term struct {
	Count   int     // how many times before the next term; 0 = forever
	Percent float64 // chance to fire per call; 0 = always
	Action  Action
}

// Rule says where (site and match), what (terms) and for how long (expiry, max injections).
type Rule struct {
	Name  string
	Site  string            // "api" (the API round-tripper) or "informer"
	Match map[string]string // verb, resource, namespace, name
	Terms []Term
	// Until ends the rule (zero: never); Max bounds its injections (0: unbounded).
	Until time.Time
	Max   int

	mu       sync.Mutex
	term     int
	used     int
	injected int
}

// ParseTerms parses e.g. "3*error(500)->off", "10%delay(2s)", "error(429,1s)", "reset".
func ParseTerms(s string) ([]Term, error) {
	var terms []Term
	for _, part := range strings.Split(s, "->") {
		part = strings.TrimSpace(part)
		t := Term{}
		if n, rest, ok := strings.Cut(part, "*"); ok {
			c, err := strconv.Atoi(n)
			if err != nil || c < 1 {
				return nil, fmt.Errorf("term %q: count %q is not a positive integer", part, n)
			}
			t.Count, part = c, rest
		}
		if p, rest, ok := strings.Cut(part, "%"); ok {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil || v <= 0 || v > 100 {
				return nil, fmt.Errorf("term %q: percent %q is not in (0, 100]", part, p)
			}
			t.Percent, part = v, rest
		}
		name, args, _ := strings.Cut(part, "(")
		args = strings.TrimSuffix(args, ")")
		switch name {
		case "off", "reset":
			t.Action = Action{Kind: name}
		case "delay":
			d, err := time.ParseDuration(args)
			if err != nil {
				return nil, fmt.Errorf("term %q: delay needs a duration: %v", part, err)
			}
			t.Action = Action{Kind: name, Delay: d}
		case "error":
			code, after, _ := strings.Cut(args, ",")
			c, err := strconv.Atoi(strings.TrimSpace(code))
			if err != nil || c < 400 || c > 599 {
				return nil, fmt.Errorf("term %q: error needs an HTTP status 400-599", part)
			}
			t.Action = Action{Kind: name, Code: c}
			if after != "" {
				if t.Action.Delay, err = time.ParseDuration(strings.TrimSpace(after)); err != nil {
					return nil, fmt.Errorf("term %q: Retry-After %q: %v", part, after, err)
				}
			}
		default:
			return nil, fmt.Errorf("term %q: unknown action %q (want off, error(code[,retry-after]), delay(d), reset)", part, name)
		}
		terms = append(terms, t)
	}
	return terms, nil
}

// ParseRules reads one rule per line: `name site key=value... : terms [max=N] [for=DURATION]`.
// Blank lines and lines starting with # are ignored. now anchors `for=`.
//
//	api-500 api verb=create resource=pods : 3*error(500)->off
//	slow-results informer resource=workflowtaskresults : delay(30s)
func ParseRules(r io.Reader, now time.Time) ([]*Rule, error) {
	var rules []*Rule
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		head, tail, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("fault rule line %d: want `name site match... : terms`, got %q", line, text)
		}
		fields := strings.Fields(head)
		if len(fields) < 2 || (fields[1] != "api" && fields[1] != "informer") {
			return nil, fmt.Errorf("fault rule line %d: want a name and a site (api or informer)", line)
		}
		rule := &Rule{Name: fields[0], Site: fields[1], Match: map[string]string{}}
		for _, f := range fields[2:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok || (k != "verb" && k != "resource" && k != "namespace" && k != "name") {
				return nil, fmt.Errorf("fault rule line %d: match %q is not verb=, resource=, namespace= or name=", line, f)
			}
			rule.Match[k] = v
		}
		parts := strings.Fields(tail)
		if len(parts) == 0 {
			return nil, fmt.Errorf("fault rule line %d: no terms", line)
		}
		terms, err := ParseTerms(parts[0])
		if err != nil {
			return nil, fmt.Errorf("fault rule line %d: %w", line, err)
		}
		rule.Terms = terms
		for _, opt := range parts[1:] {
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "max":
				if rule.Max, err = strconv.Atoi(v); err != nil || rule.Max < 1 {
					return nil, fmt.Errorf("fault rule line %d: max=%q is not a positive integer", line, v)
				}
			case "for":
				d, err := time.ParseDuration(v)
				if err != nil {
					return nil, fmt.Errorf("fault rule line %d: for=%q: %v", line, v, err)
				}
				rule.Until = now.Add(d)
			default:
				return nil, fmt.Errorf("fault rule line %d: unknown option %q (want max= or for=)", line, opt)
			}
		}
		rules = append(rules, rule)
	}
	return rules, sc.Err()
}

// matches reports whether every key of the rule's match equals the call's.
func (r *Rule) matches(call map[string]string) bool {
	for k, v := range r.Match {
		if call[k] != v {
			return false
		}
	}
	return true
}

// next decides the action for one matching call; ok is false when nothing is injected.
func (r *Rule) next(now time.Time, rnd *rand.Rand) (Action, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if (!r.Until.IsZero() && !now.Before(r.Until)) || (r.Max > 0 && r.injected >= r.Max) || r.term >= len(r.Terms) {
		return Action{}, false
	}
	t := r.Terms[r.term]
	r.used++
	if t.Count > 0 && r.used >= t.Count {
		r.term, r.used = r.term+1, 0
	}
	if t.Action.Kind == "off" || (t.Percent > 0 && rnd.Float64()*100 >= t.Percent) {
		return Action{}, false
	}
	r.injected++
	return t.Action, true
}

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

// Sites: where a rule applies.
const (
	SiteAPI      = "api"      // the API client's round-tripper
	SiteInformer = "informer" // an informer's watch (stale store) or its handlers (late notify)
	SitePoint    = "point"    // a named crash point (and the worker gate, point name=worker)
)

// Action kinds.
const (
	ActionOff         = "off"
	ActionError       = "error"
	ActionDelay       = "delay"
	ActionReset       = "reset"
	ActionDrop        = "drop"
	ActionNotifyDelay = "notify-delay"
	ActionPause       = "pause"
	ActionCrash       = "crash"
)

// Informer stages: a rule faults either the watch feeding the store or the notifications to handlers.
const (
	StageWatch  = "watch"
	StageNotify = "notify"
)

// siteActions and siteKeys say what each site accepts, so a rule never silently does nothing.
var (
	siteActions = map[string][]string{
		SiteAPI:      {ActionOff, ActionError, ActionDelay, ActionReset},
		SiteInformer: {ActionOff, ActionDelay, ActionDrop, ActionReset, ActionNotifyDelay},
		SitePoint:    {ActionOff, ActionPause, ActionDelay, ActionError, ActionCrash},
	}
	siteKeys = map[string][]string{
		SiteAPI:      {"verb", "resource", "namespace", "name"},
		SiteInformer: {"resource", "namespace", "name"},
		SitePoint:    {"name"},
	}
)

// Action is what one term does when it fires.
type Action struct {
	Kind  string        // one of the Action* constants
	Code  int           // error at the api site: HTTP status
	Delay time.Duration // delay, notify-delay: how long; error 429: Retry-After
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
	Site  string            // SiteAPI, SiteInformer or SitePoint
	Stage string            // informer rules: StageWatch or StageNotify
	Match map[string]string // verb, resource, namespace, name
	Terms []Term
	// Until ends the rule (zero: never); Max bounds its injections (0: unbounded).
	Until time.Time
	Max   int
	// Line and Text locate the rule in its source, for refusals and the start-up log.
	Line int
	Text string

	termCols []int // column of each term, for refusals by policy

	mu       sync.Mutex
	term     int
	used     int
	injected int
}

// PositionError locates a bad rule: line and column (1-based) of the offending field.
type PositionError struct {
	Line, Col int
	Msg       string
}

func (e *PositionError) Error() string {
	return fmt.Sprintf("fault rule line %d col %d: %s", e.Line, e.Col, e.Msg)
}

// termError carries the offset of the bad term inside the terms string.
type termError struct {
	off int
	msg string
}

func (e *termError) Error() string { return e.msg }

// ParseTerms parses e.g. "3*error(500)->off", "10%delay(2s)", "error(429,1s)", "reset", "drop", "crash".
func ParseTerms(s string) ([]Term, error) {
	var terms []Term
	off := 0
	for _, raw := range strings.Split(s, "->") {
		t, err := parseTerm(strings.TrimSpace(raw))
		if err != nil {
			return nil, &termError{off: off + len(raw) - len(strings.TrimLeft(raw, " \t")), msg: err.Error()}
		}
		terms = append(terms, t)
		off += len(raw) + len("->")
	}
	return terms, nil
}

func parseTerm(part string) (Term, error) {
	t := Term{}
	orig := part
	var err error
	if t.Count, part, err = termCount(part); err != nil {
		return t, fmt.Errorf("term %q: %w", orig, err)
	}
	if t.Percent, part, err = termPercent(part); err != nil {
		return t, fmt.Errorf("term %q: %w", orig, err)
	}
	name, args, hasArgs := strings.Cut(part, "(")
	if hasArgs && !strings.HasSuffix(args, ")") {
		return t, fmt.Errorf("term %q: unclosed parenthesis", orig)
	}
	args = strings.TrimSuffix(args, ")")
	parse, ok := actionArgs[name]
	if !ok {
		return t, fmt.Errorf("term %q: unknown action %q (want off, error, delay(d), reset, drop, notify-delay(d), pause or crash)", orig, name)
	}
	if t.Action, err = parse(name, args); err != nil {
		return t, fmt.Errorf("term %q: %w", orig, err)
	}
	return t, nil
}

// termCount reads a term's "N*" prefix, if any: how many calls the term lasts.
func termCount(part string) (int, string, error) {
	n, rest, ok := strings.Cut(part, "*")
	if !ok {
		return 0, part, nil
	}
	c, err := strconv.Atoi(n)
	if err != nil || c < 1 {
		return 0, part, fmt.Errorf("count %q is not a positive integer", n)
	}
	return c, rest, nil
}

// termPercent reads a term's "P%" prefix, if any: its chance to fire per call.
func termPercent(part string) (float64, string, error) {
	p, rest, ok := strings.Cut(part, "%")
	if !ok {
		return 0, part, nil
	}
	v, err := strconv.ParseFloat(p, 64)
	if err != nil || v <= 0 || v > 100 {
		return 0, part, fmt.Errorf("percent %q is not in (0, 100]", p)
	}
	return v, rest, nil
}

// actionArgs reads each action's argument (what is between its parentheses), by the action's name.
var actionArgs = map[string]func(name, args string) (Action, error){
	ActionOff:         noArgument,
	ActionReset:       noArgument,
	ActionDrop:        noArgument,
	ActionPause:       noArgument,
	ActionCrash:       noArgument,
	ActionDelay:       durationArgument,
	ActionNotifyDelay: durationArgument,
	ActionError:       errorArguments,
}

func noArgument(name, args string) (Action, error) {
	if args != "" {
		return Action{}, fmt.Errorf("%s takes no argument", name)
	}
	return Action{Kind: name}, nil
}

func durationArgument(name, args string) (Action, error) {
	d, err := time.ParseDuration(args)
	if err != nil || d <= 0 {
		return Action{}, fmt.Errorf("%s needs a positive duration, got %q", name, args)
	}
	return Action{Kind: name, Delay: d}, nil
}

// errorArguments reads error's "code[,retry-after]". Without them it is a point's failure; the api site
// requires a code (checked per site).
func errorArguments(name, args string) (Action, error) {
	a := Action{Kind: name}
	if args == "" {
		return a, nil
	}
	code, after, _ := strings.Cut(args, ",")
	c, err := strconv.Atoi(strings.TrimSpace(code))
	if err != nil || c < 400 || c > 599 {
		return a, fmt.Errorf("error needs an HTTP status 400-599")
	}
	a.Code = c
	if after != "" {
		if a.Delay, err = time.ParseDuration(strings.TrimSpace(after)); err != nil {
			return a, fmt.Errorf("Retry-After %q: %v", after, err)
		}
	}
	return a, nil
}

// field is one whitespace-separated word of a rule line and its 1-based column.
type field struct {
	text string
	col  int
}

func fieldsAt(s string, col int) []field {
	var out []field
	start := -1
	for i, r := range s + " " {
		if r == ' ' || r == '\t' {
			if start >= 0 {
				out = append(out, field{text: s[start:i], col: col + start})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// ParseRules reads one rule per line: `name site key=value... : terms [max=N] [for=DURATION]`.
// Blank lines and lines starting with # are ignored. now anchors `for=`. Errors are *PositionError.
//
//	api-500 api verb=create resource=pods : 3*error(500)->off
//	slow-results informer resource=workflowtaskresults : delay(30s)
//	crash-once point name=after-workflow-persist : 1*crash->off
func ParseRules(r io.Reader, now time.Time) ([]*Rule, error) {
	var rules []*Rule
	names := map[string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Text()
		text := strings.TrimSpace(raw)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		rule, err := parseRule(raw, line, now)
		if err != nil {
			return nil, err
		}
		if prev, ok := names[rule.Name]; ok {
			return nil, &PositionError{Line: line, Col: 1 + len(raw) - len(strings.TrimLeft(raw, " \t")),
				Msg: fmt.Sprintf("rule name %q is already used on line %d", rule.Name, prev)}
		}
		names[rule.Name] = line
		rules = append(rules, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading fault rules: %w", err)
	}
	return rules, nil
}

func parseRule(raw string, line int, now time.Time) (*Rule, error) {
	colon := strings.Index(raw, ":")
	if colon < 0 {
		return nil, refusal(line, 1, "want `name site match... : terms`, got %q", strings.TrimSpace(raw))
	}
	head, tail := fieldsAt(raw[:colon], 1), fieldsAt(raw[colon+1:], colon+2)
	if len(head) < 2 {
		return nil, refusal(line, 1, "want a name and a site (api, informer or point) before the colon")
	}
	site := head[1]
	if siteActions[site.text] == nil {
		return nil, refusal(line, site.col, "unknown site %q (want api, informer or point)", site.text)
	}
	rule := &Rule{Name: head[0].text, Site: site.text, Match: map[string]string{}, Line: line, Text: strings.TrimSpace(raw)}
	if err := rule.setMatch(head[2:], site.col); err != nil {
		return nil, err
	}
	if len(tail) == 0 {
		return nil, refusal(line, colon+2, "no terms after the colon")
	}
	if err := rule.setTerms(tail[0]); err != nil {
		return nil, err
	}
	if err := rule.setOptions(tail[1:], now); err != nil {
		return nil, err
	}
	if rule.hasAction(ActionPause) && rule.Until.IsZero() {
		return nil, refusal(line, tail[0].col, "a pause holds until its rule ends: add for=DURATION")
	}
	return rule, nil
}

// refusal refuses the rule on line at column col.
func refusal(line, col int, format string, args ...any) error {
	return &PositionError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// setMatch reads the rule's key=value words and refuses a rule without the key its site needs; siteCol
// locates that refusal.
func (r *Rule) setMatch(words []field, siteCol int) error {
	for _, f := range words {
		k, v, ok := strings.Cut(f.text, "=")
		if !ok || !contains(siteKeys[r.Site], k) || v == "" {
			return refusal(r.Line, f.col, "match %q: site %s takes %s", f.text, r.Site, strings.Join(keysEq(siteKeys[r.Site]), ", "))
		}
		r.Match[k] = v
	}
	switch {
	case r.Site == SiteInformer && r.Match["resource"] == "":
		return refusal(r.Line, siteCol, "an informer rule needs resource= (workflows, pods, workflowtaskresults, workflowactions)")
	case r.Site == SitePoint && r.Match["name"] == "":
		return refusal(r.Line, siteCol, "a point rule needs name= (%s, %s, %s, %s or %s)",
			PointAfterWorkflowPersist, PointBeforeActionStatus, PointBeforeFinalizerRelease, PointDuringRetryCleanup, PointWorker)
	}
	return nil
}

// setTerms reads the rule's terms, remembers each one's column, and refuses those its site cannot perform.
func (r *Rule) setTerms(terms field) error {
	parsed, err := ParseTerms(terms.text)
	if err != nil {
		if te, ok := err.(*termError); ok {
			return refusal(r.Line, terms.col+te.off, "%s", te.msg)
		}
		return refusal(r.Line, terms.col, "%v", err)
	}
	r.Terms = parsed
	off := 0
	for _, raw := range strings.Split(terms.text, "->") {
		r.termCols = append(r.termCols, terms.col+off)
		off += len(raw) + len("->")
	}
	if err := checkSiteTerms(r); err != nil {
		return refusal(r.Line, terms.col, "%v", err)
	}
	return nil
}

// setOptions reads the words after the terms: max=N and for=DURATION (from now).
func (r *Rule) setOptions(opts []field, now time.Time) error {
	for _, opt := range opts {
		k, v, _ := strings.Cut(opt.text, "=")
		switch k {
		case "max":
			var err error
			if r.Max, err = strconv.Atoi(v); err != nil || r.Max < 1 {
				return refusal(r.Line, opt.col, "max=%q is not a positive integer", v)
			}
		case "for":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return refusal(r.Line, opt.col, "for=%q is not a positive duration", v)
			}
			r.Until = now.Add(d)
		default:
			return refusal(r.Line, opt.col, "unknown option %q (want max= or for=)", opt.text)
		}
	}
	return nil
}

// checkSiteTerms refuses actions a site cannot perform and informer rules mixing the watch and notify stages.
func checkSiteTerms(r *Rule) error {
	for _, t := range r.Terms {
		if !contains(siteActions[r.Site], t.Action.Kind) {
			return fmt.Errorf("action %s is not available at site %s (want %s)", t.Action.Kind, r.Site, strings.Join(siteActions[r.Site], ", "))
		}
		if r.Site == SiteAPI && t.Action.Kind == ActionError && t.Action.Code == 0 {
			return fmt.Errorf("an api error needs an HTTP status: error(500)")
		}
		if r.Site == SitePoint && t.Action.Kind == ActionError && t.Action.Code != 0 {
			return fmt.Errorf("a point error takes no status: error")
		}
	}
	if r.Site != SiteInformer {
		return nil
	}
	r.Stage = StageWatch
	notify, watch := r.hasAction(ActionNotifyDelay), r.hasAction(ActionDelay) || r.hasAction(ActionDrop) || r.hasAction(ActionReset)
	if notify && watch {
		return fmt.Errorf("an informer rule faults either the watch (delay, drop, reset) or the handlers (notify-delay), not both: use two rules")
	}
	if notify {
		r.Stage = StageNotify
	}
	return nil
}

func (r *Rule) hasAction(kind string) bool {
	for _, t := range r.Terms {
		if t.Action.Kind == kind {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func keysEq(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "="
	}
	return out
}

// Policy is what a deployment allows beyond the syntax: the binary requires expiry and an explicit crash allow.
type Policy struct {
	// RequireExpiry refuses a rule with neither for= nor max=.
	RequireExpiry bool
	// AllowCrash permits crash terms (in the binary a crash exits the process).
	AllowCrash bool
}

// Check refuses the first rule the policy forbids, with its line.
func (p Policy) Check(rules []*Rule) error {
	for _, r := range rules {
		if p.RequireExpiry && r.Until.IsZero() && r.Max == 0 {
			return &PositionError{Line: r.Line, Col: len(r.Text) + 1,
				Msg: fmt.Sprintf("rule %s never expires: add for=DURATION or max=N", r.Name)}
		}
		for i, t := range r.Terms {
			if !p.AllowCrash && t.Action.Kind == ActionCrash {
				return &PositionError{Line: r.Line, Col: r.termCols[i],
					Msg: fmt.Sprintf("rule %s crashes the process: refused without --allow-fault-crash", r.Name)}
			}
		}
	}
	return nil
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
	if !r.activeLocked(now) {
		return Action{}, false
	}
	t := r.Terms[r.term]
	r.used++
	if t.Count > 0 && r.used >= t.Count {
		r.term, r.used = r.term+1, 0
	}
	if t.Action.Kind == ActionOff || (t.Percent > 0 && rnd.Float64()*100 >= t.Percent) {
		return Action{}, false
	}
	r.injected++
	return t.Action, true
}

// active reports whether the rule can still inject: not expired, not exhausted, not parked on a lasting off.
func (r *Rule) active(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.activeLocked(now) {
		return false
	}
	t := r.Terms[r.term]
	return !(t.Action.Kind == ActionOff && t.Count == 0)
}

func (r *Rule) activeLocked(now time.Time) bool {
	return (r.Until.IsZero() || now.Before(r.Until)) && (r.Max == 0 || r.injected < r.Max) && r.term < len(r.Terms)
}

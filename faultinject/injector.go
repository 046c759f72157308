package faultinject

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// workflowLabel ties pods and task results to their workflow (argo's workflows.argoproj.io/workflow).
const workflowLabel = "workflows.argoproj.io/workflow"

// ReasonFaultInjected is the Warning Event the binary records on a workflow a fault was injected into.
const ReasonFaultInjected = "FaultInjected"

// maxJournal bounds the journal of a long staging run: past it the oldest half is forgotten (counts stay).
const maxJournal = 100000

// maxEventedPairs bounds the memory of which (rule, workflow) pairs already got their event.
const maxEventedPairs = 10000

// Injection is one journal entry: which rule fired where, on what, and when.
type Injection struct {
	Rule   string
	Site   string
	Key    string // e.g. "create pods ns/name", "modified workflowtaskresults ns/name", "point after-workflow-persist"
	Action Action
	// Workflow is "namespace/name" of the workflow the injection affects, when the object can be tied to one.
	Workflow string
	Time     time.Time
}

// Injector applies rules at every site and keeps the journal tests assert on. Rules can be replaced while it
// runs (SetRules); wrapped transports, watches, handlers and points read the current set on every call.
type Injector struct {
	clock clock.Clock
	seed  uint64
	// done ends late-notify deliveries (Close).
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu         sync.Mutex
	rnd        *rand.Rand
	rules      []*Rule
	namespaces map[string]bool // nil: every namespace
	journal    []Injection
	fired      map[string]int // injections per rule, never trimmed
	journalled chan struct{}  // closed and replaced on every injection (WaitInjected)
	changed    chan struct{}  // closed and replaced when the rules are replaced (releases pauses)
	metrics    *metrics
	onWorkflow func(Injection) // the FaultInjected event, once per (rule, workflow)
	evented    map[string]struct{}
	onCrash    func(Injection)
}

// NewInjector builds an injector; the seed makes percentage terms reproducible (print it on failure).
func NewInjector(rules []*Rule, seed uint64, clk clock.Clock) *Injector {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Injector{rules: rules, clock: clk, seed: seed, rnd: rand.New(rand.NewPCG(seed, seed^0xfa17)),
		done: make(chan struct{}), fired: map[string]int{}, journalled: make(chan struct{}), changed: make(chan struct{}), evented: map[string]struct{}{}}
}

// Seed is the random seed in use.
func (in *Injector) Seed() uint64 { return in.seed }

// Journal returns the injections so far, in order (the most recent ones past maxJournal).
func (in *Injector) Journal() []Injection {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Injection(nil), in.journal...)
}

// SetRules replaces the rules (a watched ConfigMap changed); nil stops all injection. Paused points are
// released; events already held back by a delay keep their delay.
func (in *Injector) SetRules(rules []*Rule) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = rules
	in.evented = map[string]struct{}{}
	close(in.changed)
	in.changed = make(chan struct{})
}

// Rules returns the current rules.
func (in *Injector) Rules() []*Rule {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]*Rule(nil), in.rules...)
}

// ActiveRules counts the rules that can still inject (not expired, not exhausted).
func (in *Injector) ActiveRules() int {
	now := in.clock.Now()
	n := 0
	for _, r := range in.Rules() {
		if r.active(now) {
			n++
		}
	}
	return n
}

// LimitNamespaces confines api and informer faults to objects in these namespaces: calls without a namespace
// (cluster-wide lists and watches) are then never faulted. Leases stay exempt unless named; points are
// process-wide and not limited.
func (in *Injector) LimitNamespaces(namespaces []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.namespaces = map[string]bool{}
	for _, ns := range namespaces {
		in.namespaces[ns] = true
	}
}

// OnWorkflow is called once per (rule, workflow) when an injection can be tied to a workflow (the binary
// records a FaultInjected Warning Event there). The memory of pairs is reset when the rules are replaced.
func (in *Injector) OnWorkflow(fn func(Injection)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.onWorkflow = fn
}

// OnCrash is called when a crash term fires at a point, before ErrCrash is returned: the binary logs and
// exits the process there; tests leave it unset and restart the controller in-process.
func (in *Injector) OnCrash(fn func(Injection)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.onCrash = fn
}

// Close stops injecting and drops late notifications still held back; it waits for their goroutines.
func (in *Injector) Close() {
	in.closeOnce.Do(func() {
		in.SetRules(nil)
		close(in.done)
	})
	in.wg.Wait()
}

// WaitInjected blocks until rule ("" for any) has fired at least n times, or ctx ends: tests wait on it, not
// on sleeps.
func (in *Injector) WaitInjected(ctx context.Context, rule string, n int) error {
	for {
		in.mu.Lock()
		got := in.fired[rule]
		ch := in.journalled
		in.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for fault rule %q to fire %d times (fired %d): %w", rule, n, got, ctx.Err())
		}
	}
}

// decide finds the first rule of site (and informer stage) matching call that fires, journals it and counts
// it. workflow is asked only when something fires.
func (in *Injector) decide(site, stage string, call map[string]string, workflow func() string) (*Rule, Action, bool) {
	in.mu.Lock()
	if site != SitePoint && in.namespaces != nil && !in.namespaces[call["namespace"]] {
		in.mu.Unlock()
		return nil, Action{}, false
	}
	now := in.clock.Now()
	for _, r := range in.rules {
		if r.Site != site || r.Stage != stage || !r.matches(call) {
			continue
		}
		a, ok := r.next(now, in.rnd)
		if !ok {
			continue
		}
		inj := Injection{Rule: r.Name, Site: site, Action: a, Time: now,
			Key: strings.TrimSpace(fmt.Sprintf("%s %s %s/%s", call["verb"], call["resource"], call["namespace"], call["name"]))}
		if site == SitePoint {
			inj.Key = "point " + call["name"]
		}
		if workflow != nil {
			inj.Workflow = workflow()
		}
		if len(in.journal) >= maxJournal {
			in.journal = append([]Injection(nil), in.journal[maxJournal/2:]...)
		}
		in.journal = append(in.journal, inj)
		in.fired[r.Name]++
		in.fired[""]++
		close(in.journalled)
		in.journalled = make(chan struct{})
		in.metrics.injected(inj)
		notify := in.onWorkflow
		if notify != nil && inj.Workflow != "" && len(in.evented) < maxEventedPairs {
			pair := r.Name + "\x00" + inj.Workflow
			if _, seen := in.evented[pair]; seen {
				notify = nil
			} else {
				in.evented[pair] = struct{}{}
			}
		} else {
			notify = nil
		}
		in.mu.Unlock()
		if notify != nil {
			notify(inj)
		}
		return r, a, true
	}
	in.mu.Unlock()
	return nil, Action{}, false
}

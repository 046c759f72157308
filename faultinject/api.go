package faultinject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// Injection is one journal entry: which rule fired where, on what, and when.
type Injection struct {
	Rule   string
	Site   string
	Key    string // e.g. "create pods ns/name"
	Action Action
	Time   time.Time
}

// Injector applies rules at the API site and keeps the journal tests assert on.
type Injector struct {
	rules []*Rule
	clock clock.Clock
	seed  uint64

	mu      sync.Mutex
	rnd     *rand.Rand
	journal []Injection
}

// NewInjector builds an injector; the seed makes percentage terms reproducible (print it on failure).
func NewInjector(rules []*Rule, seed uint64, clk clock.Clock) *Injector {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Injector{rules: rules, clock: clk, seed: seed, rnd: rand.New(rand.NewPCG(seed, seed^0xfa17))}
}

// Seed is the random seed in use.
func (in *Injector) Seed() uint64 { return in.seed }

// Journal returns the injections so far, in order.
func (in *Injector) Journal() []Injection {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Injection(nil), in.journal...)
}

func (in *Injector) decide(site string, call map[string]string) (*Rule, Action, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.rules {
		if r.Site != site || !r.matches(call) {
			continue
		}
		if a, ok := r.next(in.clock.Now(), in.rnd); ok {
			key := strings.TrimSpace(fmt.Sprintf("%s %s %s/%s", call["verb"], call["resource"], call["namespace"], call["name"]))
			in.journal = append(in.journal, Injection{Rule: r.Name, Site: site, Key: key, Action: a, Time: in.clock.Now()})
			return r, a, true
		}
	}
	return nil, Action{}, false
}

// WrapTransport is a rest.Config.WrapTransport: API calls matching an "api" rule are delayed, failed with a
// real metav1.Status body, or have their connection reset. Leader-election Leases are exempt unless a rule
// names resource=leases.
func (in *Injector) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{in: in, next: rt}
}

type roundTripper struct {
	in   *Injector
	next http.RoundTripper
}

var errReset = errors.New("faultinject: connection reset by peer")

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	call := RequestAttributes(req)
	if call["resource"] == "leases" && !t.in.namesLeases() {
		return t.next.RoundTrip(req)
	}
	_, action, ok := t.in.decide("api", call)
	if !ok {
		return t.next.RoundTrip(req)
	}
	switch action.Kind {
	case "delay":
		select {
		case <-t.in.clock.After(action.Delay):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return t.next.RoundTrip(req)
	case "reset":
		return nil, errReset
	default:
		return statusResponse(req, action), nil
	}
}

func (in *Injector) namesLeases() bool {
	for _, r := range in.rules {
		if r.Match["resource"] == "leases" {
			return true
		}
	}
	return false
}

// statusResponse is the API server's own shape of an error: a metav1.Status with reason and code.
func statusResponse(req *http.Request, a Action) *http.Response {
	reasons := map[int]metav1.StatusReason{
		409: metav1.StatusReasonConflict, 429: metav1.StatusReasonTooManyRequests, 500: metav1.StatusReasonInternalError,
		503: metav1.StatusReasonServiceUnavailable, 504: metav1.StatusReasonTimeout, 404: metav1.StatusReasonNotFound,
		403: metav1.StatusReasonForbidden,
	}
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(a.Code), Reason: reasons[a.Code],
		Message: fmt.Sprintf("injected fault: %d for %s %s", a.Code, req.Method, req.URL.Path),
	}
	header := http.Header{"Content-Type": []string{"application/json"}}
	if a.Code == 429 && a.Delay > 0 {
		header.Set("Retry-After", strconv.Itoa(max(1, int(a.Delay.Seconds()))))
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(max(1, int(a.Delay.Seconds())))}
	}
	body, _ := json.Marshal(st)
	return &http.Response{StatusCode: a.Code, Status: fmt.Sprintf("%d %s", a.Code, http.StatusText(a.Code)), Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// RequestAttributes reads verb, resource, namespace and name from a Kubernetes API request path.
func RequestAttributes(req *http.Request) map[string]string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return map[string]string{"verb": strings.ToLower(req.Method)}
	}
	call := map[string]string{}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		call["namespace"] = parts[1]
		parts = parts[2:]
	}
	if len(parts) > 0 {
		call["resource"] = parts[0]
	}
	if len(parts) > 1 {
		call["name"] = parts[1]
	}
	if len(parts) > 2 {
		call["resource"] += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			call["verb"] = "watch"
		case call["name"] != "":
			call["verb"] = "get"
		default:
			call["verb"] = "list"
		}
	case http.MethodPost:
		call["verb"] = "create"
	case http.MethodPut:
		call["verb"] = "update"
	case http.MethodPatch:
		call["verb"] = "patch"
	case http.MethodDelete:
		call["verb"] = "delete"
		if call["name"] == "" {
			call["verb"] = "deletecollection"
		}
	}
	return call
}

// InformerDelays returns, per resource, the delay of each "informer" rule: the stale-store fault. Only
// delay(d) is meaningful there; other actions are refused so a rule never silently does nothing.
func InformerDelays(rules []*Rule) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, r := range rules {
		if r.Site != "informer" {
			continue
		}
		if len(r.Terms) != 1 || r.Terms[0].Action.Kind != "delay" || r.Terms[0].Count != 0 || r.Terms[0].Percent != 0 {
			return nil, fmt.Errorf("fault rule %s: an informer rule takes exactly one delay(d) term", r.Name)
		}
		if r.Match["resource"] == "" {
			return nil, fmt.Errorf("fault rule %s: an informer rule needs resource=", r.Name)
		}
		out[r.Match["resource"]] = r.Terms[0].Action.Delay
	}
	return out, nil
}

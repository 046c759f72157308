package bench

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wfguard/wfguard/faultinject"
)

// callCounter counts API requests by verb and resource, and the bytes of their bodies; watches count
// once, when opened.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
	bytes  map[string]int64
}

func newCallCounter() *callCounter {
	return &callCounter{counts: map[string]int{}, bytes: map[string]int64{}}
}

// count records one request under its verb and resource.
func (c *callCounter) count(req *http.Request) {
	call := faultinject.RequestAttributes(req)
	key := call["verb"] + " " + call["resource"]
	c.mu.Lock()
	c.counts[key]++
	c.bytes[key] += max(req.ContentLength, 0) // what the API server decodes, validates and stores
	c.mu.Unlock()
}

// reset forgets the counts so far (a warm-up's).
func (c *callCounter) reset() {
	c.mu.Lock()
	c.counts, c.bytes = map[string]int{}, map[string]int64{}
	c.mu.Unlock()
}

// APICall is one verb+resource count.
type APICall struct {
	Call        string  `json:"call"`
	Total       int     `json:"total"`
	PerPod      float64 `json:"perPod"`
	PerWorkflow float64 `json:"perWorkflow"`
	// RequestBytes is the calls' request bodies, summed.
	RequestBytes int64 `json:"requestBytes"`
}

// meanRequestBytes is the mean body of one call.
func (a APICall) meanRequestBytes() float64 {
	return float64(a.RequestBytes) / float64(max(a.Total, 1))
}

// snapshot returns the counts with their rates per pod and per workflow.
func (c *callCounter) snapshot(pods, workflows int) []APICall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []APICall
	for k, n := range c.counts {
		out = append(out, APICall{Call: k, Total: n, PerPod: float64(n) / float64(max(pods, 1)), PerWorkflow: float64(n) / float64(max(workflows, 1)), RequestBytes: c.bytes[k]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// writes counts the requests that change state (create, update, patch, delete).
func (c *callCounter) writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		switch verbOf(k) {
		case "create", "update", "patch", "delete":
			n += v
		}
	}
	return n
}

func verbOf(call string) string {
	for i := range call {
		if call[i] == ' ' {
			return call[:i]
		}
	}
	return call
}

// eventWrites counts the requests that wrote Events.
func (c *callCounter) eventWrites() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		if strings.HasSuffix(k, " events") {
			n += v
		}
	}
	return n
}

// Events are recorded asynchronously, one at a time: when a run's last workflow completes, some of its
// Events are still queued. settleEvents waits until no Event write came for eventsQuiet (at most
// eventsSettleLimit), so the counts include them.
const (
	eventsQuiet       = time.Second
	eventsSettleLimit = time.Minute
)

func settleEvents(ctx context.Context, c *callCounter) error {
	ctx, cancel := context.WithTimeout(ctx, eventsSettleLimit)
	defer cancel()
	last, since := c.eventWrites(), time.Now()
	tick := time.NewTicker(eventsQuiet / 10)
	defer tick.Stop()
	for time.Since(since) < eventsQuiet {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the Event writes to settle (%d so far): %w", last, ctx.Err())
		}
		if n := c.eventWrites(); n != last {
			last, since = n, time.Now()
		}
	}
	return nil
}

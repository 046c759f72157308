package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// APIServerLoad is what the API server served over a run, from its own /metrics before and after: the
// work a subject asked of it, apart from what that work cost in CPU (MachineCPUSeconds). Every subject
// runs the same pods, so a subject whose API server CPU is higher for the same load did not ask for more.
type APIServerLoad struct {
	// Requests are every request the API server completed, watches that ended included
	// (apiserver_request_total): the node's, the observers' and the bench's as well as the subject's.
	Requests float64 `json:"requests"`
	// WatchEvents and WatchEventBytes are the events it sent to every watcher
	// (apiserver_watch_events_total, apiserver_watch_events_sizes_sum).
	WatchEvents     float64 `json:"watchEvents"`
	WatchEventBytes float64 `json:"watchEventBytes"`
}

// apiServerLoad is the load served between two scrapes of the API server's /metrics (parseMetrics).
func apiServerLoad(before, after map[string]float64) APIServerLoad {
	diff := func(name string) float64 { return after[name] - before[name] }
	return APIServerLoad{
		Requests:        diff("apiserver_request_total"),
		WatchEvents:     diff("apiserver_watch_events_total"),
		WatchEventBytes: diff("apiserver_watch_events_sizes_sum"),
	}
}

// add sums two loads (a subject's rounds); nil counts as none.
func (l *APIServerLoad) add(o *APIServerLoad) *APIServerLoad {
	if o == nil {
		return l
	}
	sum := *o
	if l != nil {
		sum.Requests += l.Requests
		sum.WatchEvents += l.WatchEvents
		sum.WatchEventBytes += l.WatchEventBytes
	}
	return &sum
}

// apiServerMetrics reads the API server's /metrics through the bench's admin client, and saves the text
// into path when the run keeps its logs.
func (e *env) apiServerMetrics(ctx context.Context, path string) (map[string]float64, error) {
	body, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	if e.profiling() {
		if err := os.WriteFile(filepath.Clean(path), body, 0o644); err != nil {
			return nil, fmt.Errorf("saving the API server's metrics: %w", err)
		}
	}
	m, err := parseMetrics(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	return m, nil
}

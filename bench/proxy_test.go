package bench

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// upstreamAPI is a stand-in API server that requires the admin's token and answers every request with
// its method and path; a watch of workflowtaskresults streams what the test writes to events.
type upstreamAPI struct {
	*httptest.Server
	events chan string
}

func newUpstreamAPI(t *testing.T) *upstreamAPI {
	u := &upstreamAPI{events: make(chan string)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admin-token" {
			http.Error(w, "no admin credentials", http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
			return
		}
		// As the API server may, compress the stream for a client that accepts it; say what was asked.
		w.Header().Set(sawAcceptEncoding, r.Header.Get("Accept-Encoding"))
		var out io.Writer = w
		flush := w.(http.Flusher).Flush
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out, flush = gz, func() { _ = gz.Flush(); w.(http.Flusher).Flush() }
		}
		w.WriteHeader(http.StatusOK)
		flush()
		for {
			select {
			case ev, ok := <-u.events:
				if !ok {
					return
				}
				fmt.Fprintln(out, ev)
				flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// sawAcceptEncoding is the stand-in's response header naming the Accept-Encoding its request carried.
const sawAcceptEncoding = "X-Saw-Accept-Encoding"

func TestTheProxyPassesOnTheCompressionItsClientAsksFor(t *testing.T) {
	u := newUpstreamAPI(t)
	p, _ := startTestProxy(t, u, proxyOptions{})
	for _, tc := range []struct {
		name, acceptEncoding string
	}{
		{"a client that turned compression off (a kubeconfig's disable-compression) gets the stream uncompressed, as the API server sent it", ""},
		{"a client that asks for gzip gets the API server's gzip untouched", "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/namespaces/ns/pods?watch=true", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", tc.acceptEncoding)
			}
			// Neither adding gzip nor undoing it, as a client-go transport with DisableCompression.
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := resp.Header.Get(sawAcceptEncoding); got != tc.acceptEncoding {
				t.Errorf("the API server saw Accept-Encoding %q, want %q", got, tc.acceptEncoding)
			}
			if got := resp.Header.Get("Content-Encoding"); got != tc.acceptEncoding {
				t.Errorf("the client got Content-Encoding %q, want %q", got, tc.acceptEncoding)
			}
		})
	}
}

func startTestProxy(t *testing.T, u *upstreamAPI, o proxyOptions) (*apiProxy, *callCounter) {
	t.Helper()
	calls := newCallCounter()
	p, err := startProxy(&rest.Config{Host: u.URL, BearerToken: "admin-token"}, calls, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p, calls
}

func TestTheProxyForwardsWithTheAdminsCredentialsAndCountsEachCallByVerbAndResource(t *testing.T) {
	u := newUpstreamAPI(t)
	p, calls := startTestProxy(t, u, proxyOptions{})
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/ns/pods"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/p1"},
		{http.MethodPost, "/api/v1/namespaces/ns/pods"},
		{http.MethodPost, "/api/v1/namespaces/ns/pods"},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/p1"},
		{http.MethodPut, "/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/wf"},
	} {
		req, err := http.NewRequest(r.method, p.URL()+r.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != r.method+" "+r.path {
			t.Errorf("%s %s through the proxy: %s %q", r.method, r.path, resp.Status, body)
		}
	}
	got := map[string]int{}
	for _, c := range calls.snapshot(2, 1) {
		got[c.Call] = c.Total
	}
	want := map[string]int{"list pods": 1, "get pods": 1, "create pods": 2, "patch pods": 1, "update workflows": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counted %v, want %v", got, want)
	}
	if calls.writes() != 4 {
		t.Errorf("writes %d, want 4", calls.writes())
	}
	for _, c := range calls.snapshot(2, 1) {
		if want := int64(2 * c.Total); c.RequestBytes != want { // every body was "{}"
			t.Errorf("%s: request bytes %d, want %d", c.Call, c.RequestBytes, want)
		}
	}
}

func TestTheProxyStreamsAWatchEventBeforeTheStreamEnds(t *testing.T) {
	u := newUpstreamAPI(t)
	p, calls := startTestProxy(t, u, proxyOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/namespaces/ns/pods?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	u.events <- `{"type":"ADDED","object":{"metadata":{"name":"p1"}}}`
	var ev watchEvent
	// The upstream stream stays open: the event arrives only if the proxy flushed it.
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil || ev.Type != "ADDED" {
		t.Fatalf("first event through the proxy: %+v, %v", ev, err)
	}
	if got := calls.snapshot(1, 1); len(got) != 1 || got[0].Call != "watch pods" || got[0].Total != 1 {
		t.Errorf("a watch counts once, when opened: %+v", got)
	}
}

func TestTheProxyDelaysATaskResultWatchEventByEventEvenWhenTheClientAcceptsGzip(t *testing.T) {
	u := newUpstreamAPI(t)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p, _ := startTestProxy(t, u, proxyOptions{DelayResults: 30 * time.Second, Clock: clk})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/apis/argoproj.io/v1alpha1/namespaces/ns/workflowtaskresults?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip") // as a Go client's transport asks for it
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = gz
	}
	out := delayedReader(body)
	u.events <- strings.TrimSpace(event("ADDED", "r1"))
	waitFor(t, clk.HasWaiters) // the event is held
	select {
	case got := <-out:
		t.Fatalf("released before its time: %q", got)
	default:
	}
	clk.Step(30 * time.Second)
	select {
	case got := <-out:
		if got != "ADDED r1" {
			t.Errorf("released %q, want ADDED r1", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event was not released after the delay")
	}
}

// delayedReader decodes the events of a delayedEvents stream onto a channel, by type.
func delayedReader(d io.Reader) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		dec := json.NewDecoder(d)
		for {
			var ev struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				return
			}
			out <- ev.Type + " " + ev.Object.Metadata.Name
		}
	}()
	return out
}

func event(typ, name string, annotations ...string) string {
	a := ""
	if len(annotations) == 2 {
		a = fmt.Sprintf(`,"annotations":{%q:%q}`, annotations[0], annotations[1])
	}
	return fmt.Sprintf(`{"type":%q,"object":{"metadata":{"name":%q%s}}}`+"\n", typ, name, a)
}

func TestDelayedWatchEvents(t *testing.T) {
	const delay = 30 * time.Second
	for _, tc := range []struct {
		name    string
		initial bool // sendInitialEvents=true
		// before are written at once; then the clock steps by step; want are the events out by then.
		before []string
		step   time.Duration
		want   []string
	}{
		{"an event is held back until the delay after it arrived has passed", false,
			[]string{event("ADDED", "r1")}, delay - time.Millisecond, nil},
		{"an event is released once the delay after it arrived has passed", false,
			[]string{event("ADDED", "r1")}, delay, []string{"ADDED r1"}},
		{"a bookmark is not delayed itself but never overtakes a held event", false,
			[]string{event("MODIFIED", "r1"), event("BOOKMARK", "")}, delay, []string{"MODIFIED r1", "BOOKMARK "}},
		{"a bookmark alone passes at once", false,
			[]string{event("BOOKMARK", "")}, 0, []string{"BOOKMARK "}},
		{"a streamed initial list passes at once up to its end bookmark, and what follows is held", true,
			[]string{event("ADDED", "r1"), event("BOOKMARK", "", initialEventsEnd, "true"), event("MODIFIED", "r1")}, 0,
			[]string{"ADDED r1", "BOOKMARK "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			pr, pw := io.Pipe()
			d := newDelayedEvents(ctx, pr, delay, tc.initial, clk)
			out := delayedReader(d)
			for _, ev := range tc.before {
				if _, err := io.WriteString(pw, ev); err != nil {
					t.Fatal(err)
				}
			}
			// Every event written is queued once the receiver has decoded it.
			waitFor(t, func() bool {
				d.mu.Lock()
				defer d.mu.Unlock()
				return len(d.queue)+len(d.pending)+len(out) > 0 || len(tc.before) == 0
			})
			for i, want := range tc.want {
				if i == 0 && tc.step > 0 {
					waitFor(t, clk.HasWaiters) // the reader waits on the head event's release
					clk.Step(tc.step)
				}
				select {
				case got := <-out:
					if got != want {
						t.Errorf("event %d: %q, want %q", i, got, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("event %d (%q) not released", i, want)
				}
			}
			if len(tc.want) == 0 {
				waitFor(t, clk.HasWaiters)
				clk.Step(tc.step)
				waitFor(t, clk.HasWaiters) // still waiting: the step did not reach the release time
			}
			select {
			case got := <-out:
				t.Errorf("released before its time: %q", got)
			default:
			}
			pw.Close()
			cancel()
			for range out {
			}
			_ = d.Close()
		})
	}
}

// waitFor polls cond until it holds (at most ten seconds).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("condition never held: %v", err)
	}
}

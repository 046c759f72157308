package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"

	"github.com/wfguard/wfguard/faultinject"
)

// apiProxy stands between an out-of-process controller and the API server: it counts the controller's
// requests by verb and resource and, in the late-results scenario, holds back its task-result watch events.
// The controller talks plain http to 127.0.0.1; the proxy forwards with the control plane's admin credentials.
type apiProxy struct {
	calls    *callCounter
	server   *http.Server
	listener net.Listener
	done     chan struct{}
	// errorLog is the file of LogPath, closed with the proxy (nil without one).
	errorLog *os.File
}

// proxyOptions shape what the proxy does to the streams it forwards.
type proxyOptions struct {
	// DelayResults delays every event of a workflowtaskresults watch by this much (0: none).
	DelayResults time.Duration
	Clock        clock.Clock
	// LogPath is the file that receives the proxy's errors, e.g. an exec's SPDY upgrade it cannot forward
	// over HTTP/2 ("": the standard logger).
	LogPath  string
	errorLog *log.Logger
}

// startProxy listens on a free port of 127.0.0.1 and forwards to upstream's API server.
func startProxy(upstream *rest.Config, calls *callCounter, o proxyOptions) (*apiProxy, error) {
	var errorLog *os.File
	if o.LogPath != "" {
		f, err := os.Create(o.LogPath)
		if err != nil {
			return nil, fmt.Errorf("creating the proxy's log: %w", err)
		}
		errorLog, o.errorLog = f, log.New(f, "", log.LstdFlags)
	}
	fail := func(err error) (*apiProxy, error) {
		if errorLog != nil {
			_ = errorLog.Close()
		}
		return nil, err
	}
	h, err := newProxyHandler(upstream, calls, o)
	if err != nil {
		return fail(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("listening for the API proxy: %w", err))
	}
	p := &apiProxy{calls: calls, listener: l, server: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{}),
		errorLog: errorLog}
	go func() {
		defer close(p.done)
		_ = p.server.Serve(l)
	}()
	return p, nil
}

// URL is the proxy's address, for the controller's kubeconfig.
func (p *apiProxy) URL() string { return "http://" + p.listener.Addr().String() }

// close ends the proxy and every stream through it (their request contexts end with the connections),
// then its log.
func (p *apiProxy) close() {
	_ = p.server.Close()
	<-p.done
	if p.errorLog != nil {
		_ = p.errorLog.Close()
	}
}

// newProxyHandler is the counting, delaying reverse proxy to upstream's API server.
func newProxyHandler(upstream *rest.Config, calls *callCounter, o proxyOptions) (http.Handler, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's address %q: %w", upstream.Host, err)
	}
	// Each controller's requests and watches on a connection of their own, as a controller process has.
	// The proxy passes on the compression its client asks for: its transport neither asks for gzip itself
	// nor undoes it, so the API server compresses exactly what it would for the client alone.
	config := ownConnection(upstream)
	config.DisableCompression = true
	transport, err := rest.TransportFor(config)
	if err != nil {
		return nil, fmt.Errorf("building the API proxy's transport: %w", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			if o.DelayResults > 0 && delayed(r.In) {
				// The delay reads the events: ask for them uncompressed.
				r.Out.Header.Del("Accept-Encoding")
			}
		},
		Transport: transport,
		ErrorLog:  o.errorLog,
		// Watches stream: every write is flushed at once.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if o.DelayResults <= 0 || resp.StatusCode != http.StatusOK {
				return nil
			}
			if !delayed(resp.Request) {
				return nil
			}
			initial := resp.Request.URL.Query().Get("sendInitialEvents") == "true"
			resp.Body = newDelayedEvents(resp.Request.Context(), resp.Body, o.DelayResults, initial, o.Clock)
			return nil
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.count(req)
		rp.ServeHTTP(w, req)
	}), nil
}

// delayed reports whether req is a watch whose events the late-results scenario delays.
func delayed(req *http.Request) bool {
	call := faultinject.RequestAttributes(req)
	return call["verb"] == "watch" && call["resource"] == "workflowtaskresults"
}

// writeKubeconfig writes a kubeconfig that points a controller at the proxy, without credentials.
func writeKubeconfig(path, server, namespace string) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["bench"] = &clientcmdapi.Cluster{Server: server}
	c.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	c.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench", Namespace: namespace}
	c.CurrentContext = "bench"
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		return fmt.Errorf("writing the controller's kubeconfig %s: %w", path, err)
	}
	return nil
}

// initialEventsEnd is the annotation of the bookmark that ends a watch's initial events (a streamed list).
const initialEventsEnd = "k8s.io/initial-events-end"

// delayedEvents re-emits a JSON watch stream with every event released delay after it arrived, in order,
// as faultinject.DelayWatchEvents does in process: bookmarks and errors are not delayed themselves but never
// overtake a held event, and a streamed initial list (sendInitialEvents=true) passes at once up to and
// including its end bookmark, as the in-process fault leaves lists alone.
type delayedEvents struct {
	ctx   context.Context
	body  io.ReadCloser
	clock clock.Clock
	delay time.Duration

	mu      sync.Mutex
	queue   []heldEvent
	last    time.Time // release time of the newest queued event: nothing overtakes it
	readErr error     // the upstream stream's end (io.EOF or its error)
	more    chan struct{}

	pending []byte // the part of the head event not yet read
}

type heldEvent struct {
	data []byte
	at   time.Time
}

func newDelayedEvents(ctx context.Context, body io.ReadCloser, delay time.Duration, initial bool, clk clock.Clock) *delayedEvents {
	d := &delayedEvents{ctx: ctx, body: body, clock: clk, delay: delay, more: make(chan struct{}, 1)}
	go d.receive(initial)
	return d
}

// watchEvent is the part of a watch event the delay looks at.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

func (d *delayedEvents) receive(initial bool) {
	dec := json.NewDecoder(d.body)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		now := d.clock.Now()
		d.mu.Lock()
		if err != nil {
			d.readErr = err
			d.mu.Unlock()
			d.signal()
			return
		}
		var ev watchEvent
		at := now.Add(d.delay)
		if json.Unmarshal(raw, &ev) == nil {
			switch {
			case initial:
				at = now
				if ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations[initialEventsEnd] == "true" {
					initial = false
				}
			case ev.Type == "BOOKMARK" || ev.Type == "ERROR":
				at = now
			}
		}
		if at.Before(d.last) {
			at = d.last
		}
		d.last = at
		d.queue = append(d.queue, heldEvent{data: append(raw, '\n'), at: at})
		d.mu.Unlock()
		d.signal()
	}
}

func (d *delayedEvents) signal() {
	select {
	case d.more <- struct{}{}:
	default:
	}
}

// Read returns the events whose time has come; it blocks while the head event is held.
func (d *delayedEvents) Read(p []byte) (int, error) {
	for len(d.pending) == 0 {
		d.mu.Lock()
		if len(d.queue) == 0 {
			err := d.readErr
			d.mu.Unlock()
			if err != nil {
				return 0, err
			}
			select {
			case <-d.more:
			case <-d.ctx.Done():
				return 0, d.ctx.Err()
			}
			continue
		}
		head := d.queue[0]
		d.mu.Unlock()
		if wait := head.at.Sub(d.clock.Now()); wait > 0 {
			select {
			case <-d.clock.After(wait):
			case <-d.ctx.Done():
				return 0, d.ctx.Err()
			}
			continue
		}
		d.mu.Lock()
		d.queue = d.queue[1:]
		d.mu.Unlock()
		d.pending = head.data
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

// Close ends the upstream stream, which ends the receiving goroutine.
func (d *delayedEvents) Close() error {
	err := d.body.Close()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

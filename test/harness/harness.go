package harness

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/sandbox"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// Namespace creates a fresh namespace named after prefix (with its default ServiceAccount), failing the
// test if it cannot.
func Namespace(t testing.TB, config *rest.Config, prefix string) string {
	t.Helper()
	ns, err := controlplane.CreateNamespace(t.Context(), config, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// Logger logs to the test's log (t.Log), at Info and above.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Controller is a wfguard controller running in the test process (sandbox.StartController) until Stop or
// the end of the test.
//
// An error from the controller's Run fails the test ("controller: <error>"), except a stop at an
// injected crash point (faultinject.ErrCrash: the test armed it) and a Stop before the caches synced.
type Controller struct {
	t        testing.TB
	config   *rest.Config
	opts     controller.Options
	restart  bool
	restarts atomic.Int32
	done     chan struct{} // closed when the supervisor has seen the last controller stop

	mu       sync.Mutex
	stopped  bool
	current  *sandbox.Controller
	registry *prometheus.Registry
}

// RecordKey is the record key of every controller the harness starts (Options.RecordKey).
var RecordKey = mustRecordKey()

func mustRecordKey() *provenance.Key {
	key, err := provenance.NewKey([]byte("wfguard test record key: 32 bytes or more"))
	if err != nil {
		panic(err)
	}
	return key
}

// StartController runs controller.New(config, opts) until Stop or the end of the test. opts are used as
// given, except a nil Registry: each start gets a fresh one (Registry).
func StartController(t testing.TB, config *rest.Config, opts controller.Options) *Controller {
	t.Helper()
	c := startController(t, config, opts, false)
	t.Cleanup(c.Stop)
	return c
}

// StartRestartingController is StartController for a controller that may crash at an injected crash point:
// like a Deployment restarting a crashed pod, it then starts a new controller with the same options (and
// a fresh Registry), until Stop or the end of the test. Restarts counts the restarts.
func StartRestartingController(t testing.TB, config *rest.Config, opts controller.Options) *Controller {
	t.Helper()
	c := startController(t, config, opts, true)
	t.Cleanup(c.Stop)
	return c
}

func startController(t testing.TB, config *rest.Config, opts controller.Options, restart bool) *Controller {
	t.Helper()
	c := &Controller{t: t, config: config, opts: opts, restart: restart, done: make(chan struct{})}
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	go c.supervise()
	return c
}

// start starts a controller as the current one; the caller holds mu or is the only user.
func (c *Controller) start() error {
	opts := c.opts
	if opts.RecordKey == nil {
		opts.RecordKey = RecordKey // every start shares it, as every replica and restart reads one Secret
	}
	var registry *prometheus.Registry
	if opts.Registry == nil {
		registry = prometheus.NewRegistry()
		opts.Registry = registry
	}
	ctrl, err := sandbox.StartController(context.Background(), c.config, opts)
	if err != nil {
		return err
	}
	c.current, c.registry = ctrl, registry
	return nil
}

// supervise waits for the current controller to stop, reports its error and, for a restarting
// controller, starts the next one after a crash.
func (c *Controller) supervise() {
	defer close(c.done)
	for {
		c.mu.Lock()
		current := c.current
		c.mu.Unlock()
		err := current.Err()
		c.mu.Lock()
		if errors.Is(err, faultinject.ErrCrash) && c.restart && !c.stopped {
			c.restarts.Add(1)
			err = c.start()
			c.mu.Unlock()
			if err == nil {
				continue
			}
			c.t.Errorf("controller: %v", err)
			return
		}
		stopped := c.stopped
		c.mu.Unlock()
		if err != nil && !errors.Is(err, faultinject.ErrCrash) && !(stopped && errors.Is(err, context.Canceled)) {
			c.t.Errorf("controller: %v", err)
		}
		return
	}
}

// Stop stops the controller (for a restarting one, the current one and the restarts) and waits for it to
// drain; it may be called more than once.
func (c *Controller) Stop() {
	c.mu.Lock()
	c.stopped = true
	current := c.current
	c.mu.Unlock()
	_ = current.Stop()
	<-c.done
}

// Controller is the running controller (the latest, for a restarting one): package controller's own tests
// reach its test hooks (controller/export_test.go) through it.
func (c *Controller) Controller() *controller.Controller {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current.Controller
}

// Registry is the metrics registry of the running controller (the latest, for a restarting one); nil when
// the options named their own.
func (c *Controller) Registry() *prometheus.Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registry
}

// Restarts is how many times a restarting controller was started again after a crash.
func (c *Controller) Restarts() int { return int(c.restarts.Load()) }

// StartNode runs a simulated node until the end of the test (its Stop may be called earlier). A nil
// opts.Config is config.
func StartNode(t testing.TB, config *rest.Config, opts simnode.Options) *simnode.Node {
	t.Helper()
	if opts.Config == nil {
		opts.Config = config
	}
	node, err := simnode.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	return node
}

// Env is a controller and a simulated node working together.
type Env struct {
	t      testing.TB
	config *rest.Config
	// Controller is the running controller; StartController replaces it.
	Controller *Controller
	Node       *simnode.Node
}

// Start runs a controller (StartController) and a simulated node (StartNode) on config until the end of
// the test, when the node is stopped first, then the controller running then (after restarts).
func Start(t testing.TB, config *rest.Config, ctrl controller.Options, node simnode.Options) *Env {
	t.Helper()
	e := &Env{t: t, config: config}
	t.Cleanup(func() {
		if e.Node != nil {
			e.Node.Stop()
		}
		if e.Controller != nil {
			e.Controller.Stop()
		}
	})
	e.Controller = startController(t, config, ctrl, false)
	if node.Config == nil {
		node.Config = config
	}
	var err error
	if e.Node, err = simnode.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	return e
}

// StartController stops the env's controller and starts another with opts in its place.
func (e *Env) StartController(opts controller.Options) {
	e.t.Helper()
	e.Controller.Stop()
	e.Controller = nil
	e.Controller = startController(e.t, e.config, opts, false)
}

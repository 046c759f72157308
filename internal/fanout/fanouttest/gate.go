package fanouttest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// GateTimeout is how long a Gate holds calls when its bound is never reached (the code under test makes
// fewer calls at once): it then lets them through, and Most reports how many there were.
const GateTimeout = 10 * time.Second

// Gate holds each call until bound calls are in flight at once, then lets every call through, and records
// the most calls in flight: a fan-out bounded at bound reaches it exactly, one bounded lower never does,
// and one bounded higher exceeds it once the gate is open.
type Gate struct {
	bound          int32
	inFlight, most atomic.Int32
	open           chan struct{}
	once           sync.Once
	timeout        *time.Timer
}

// NewGate returns a Gate closed until bound calls are in flight.
func NewGate(bound int) *Gate {
	return &Gate{bound: int32(bound), open: make(chan struct{}), timeout: time.NewTimer(GateTimeout)}
}

// Enter counts a call in flight and holds it while the gate is closed.
func (g *Gate) Enter() {
	now := g.inFlight.Add(1)
	for m := g.most.Load(); now > m && !g.most.CompareAndSwap(m, now); m = g.most.Load() {
	}
	if now >= g.bound {
		g.release()
	}
	select {
	case <-g.open:
	case <-g.timeout.C:
		g.release()
	}
}

// Leave counts a call done.
func (g *Gate) Leave() { g.inFlight.Add(-1) }

// Most is the most calls that were in flight at once.
func (g *Gate) Most() int { return int(g.most.Load()) }

func (g *Gate) release() {
	g.once.Do(func() {
		g.timeout.Stop()
		close(g.open)
	})
}

// GatePodDeletes returns kube with every pod Delete passing through g.
func GatePodDeletes(kube kubernetes.Interface, g *Gate) kubernetes.Interface {
	return gatedKube{Interface: kube, gate: g}
}

type gatedKube struct {
	kubernetes.Interface
	gate *Gate
}

func (k gatedKube) CoreV1() typedcorev1.CoreV1Interface {
	return gatedCore{CoreV1Interface: k.Interface.CoreV1(), gate: k.gate}
}

type gatedCore struct {
	typedcorev1.CoreV1Interface
	gate *Gate
}

func (c gatedCore) Pods(namespace string) typedcorev1.PodInterface {
	return gatedPods{PodInterface: c.CoreV1Interface.Pods(namespace), gate: c.gate}
}

type gatedPods struct {
	typedcorev1.PodInterface
	gate *Gate
}

func (p gatedPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	p.gate.Enter()
	defer p.gate.Leave()
	return p.PodInterface.Delete(ctx, name, opts)
}

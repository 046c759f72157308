package fanouttest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	return gatedKube{Interface: kube, gate: g, verb: "delete"}
}

// GatePodPatches returns kube with every pod Patch passing through g.
func GatePodPatches(kube kubernetes.Interface, g *Gate) kubernetes.Interface {
	return gatedKube{Interface: kube, gate: g, verb: "patch"}
}

type gatedKube struct {
	kubernetes.Interface
	gate *Gate
	verb string
}

func (k gatedKube) CoreV1() typedcorev1.CoreV1Interface {
	return gatedCore{CoreV1Interface: k.Interface.CoreV1(), kube: k}
}

type gatedCore struct {
	typedcorev1.CoreV1Interface
	kube gatedKube
}

func (c gatedCore) Pods(namespace string) typedcorev1.PodInterface {
	return gatedPods{PodInterface: c.CoreV1Interface.Pods(namespace), kube: c.kube}
}

type gatedPods struct {
	typedcorev1.PodInterface
	kube gatedKube
}

// through enters the gate for a call of verb when verb is the one gated, and returns how to leave it.
func (p gatedPods) through(verb string) func() {
	if verb != p.kube.verb {
		return func() {}
	}
	p.kube.gate.Enter()
	return p.kube.gate.Leave
}

func (p gatedPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	defer p.through("delete")()
	return p.PodInterface.Delete(ctx, name, opts)
}

func (p gatedPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	defer p.through("patch")()
	return p.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
}

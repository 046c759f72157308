package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// gatedPods holds every create until createParallelism are in flight at once, then lets all through, so
// a test sees the bound reached without sleeping; cancel, when set, is called by the first create, which
// then fails as a create cut short by the controller stopping does.
type gatedPods struct {
	recordingPods
	mu                  sync.Mutex
	inFlight, most, all int
	release             chan struct{}
	released            bool
	cancel              context.CancelFunc
}

func (g *gatedPods) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	g.mu.Lock()
	g.all++
	if g.cancel != nil {
		g.cancel()
		g.mu.Unlock()
		return ctx.Err()
	}
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == createParallelism && !g.released {
		g.released = true
		close(g.release)
	}
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return g.recordingPods.CreatePod(ctx, pod)
}

// fanOut is a workflow whose one step group runs items pods at once.
func fanOut(items int) string {
	list := make([]string, items)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf(`metadata: {name: wide, namespace: ns, uid: 33333333-3333-3333-3333-333333333333}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: each, template: work, withItems: [%s]}]]
  - name: work
    container: {image: alpine, command: ["true"]}
`, strings.Join(list, ","))
}

func TestAFanOutsPodsAreCreatedInParallelUpToTheBound(t *testing.T) {
	const items = 3 * createParallelism
	pods := &gatedPods{recordingPods: recordingPods{created: map[string]*corev1.Pod{}}, release: make(chan struct{})}
	p := passOver(t, fanOut(items))
	if err := (&Engine{Pods: pods}).Execute(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(pods.created) != items || pods.most != createParallelism {
		t.Fatalf("%d pods created with at most %d in flight, want %d with %d", len(pods.created), pods.most, items, createParallelism)
	}
}

func TestACreateCutShortByTheControllerStoppingForgetsTheNodeInsteadOfErroringIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := &gatedPods{recordingPods: recordingPods{created: map[string]*corev1.Pod{}}, release: make(chan struct{}), cancel: cancel}
	p := passOver(t, fanOut(2*createParallelism))
	err := (&Engine{Pods: pods}).Execute(ctx, p)
	if err == nil || !isAPIError(err) {
		t.Fatalf("Execute = %v, want a transient error: the pass is retried", err)
	}
	for _, n := range p.WF.Status.Nodes {
		if n.Type == wfv1.NodeTypePod || n.Phase == wfv1.NodeError {
			t.Errorf("node %s (%s) is %s: a pod never created is forgotten, built again next pass", n.Name, n.Type, n.Phase)
		}
	}
	if pods.all == 0 || len(pods.created) != 0 {
		t.Fatalf("%d creates tried, %d made; want at least one tried and none made", pods.all, len(pods.created))
	}
}

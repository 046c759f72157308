package controllerconfig

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatcher: a valid version comes into force and is announced; an invalid edit keeps it, with one
// Warning Event and a metric; an unsupported key is logged once; a deletion brings back the defaults.
func TestWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	kube := fake.NewClientset(configMap(map[string]string{"parallelism": "2", "navColor": "red"}))
	recorder := record.NewFakeRecorder(10)
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	w, err := NewWatcher(Options{Kube: kube, Namespace: "argo", Log: slog.New(slog.NewTextHandler(&logs, nil)), Registry: reg, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan *config.Config, 10)
	w.OnChange(func(c *config.Config) { changes <- c })
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := w.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := (<-changes).Parallelism; got != 2 || w.Current().Parallelism != 2 {
		t.Fatalf("parallelism in force = %d, want 2", got)
	}

	update := func(data map[string]string) {
		cm := configMap(data)
		if _, err := kube.CoreV1().ConfigMaps("argo").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update(map[string]string{"parallelism": "oops", "navColor": "red"})
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning ConfigMapInvalid ") || !strings.Contains(e, "last valid config stays in force") {
			t.Errorf("event = %q, want a ConfigMapInvalid Warning", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no ConfigMapInvalid event")
	}
	if w.Current().Parallelism != 2 {
		t.Errorf("parallelism after an invalid edit = %d, want the last valid 2", w.Current().Parallelism)
	}
	if got := testutil.ToFloat64(w.metrics.loads.WithLabelValues(resultInvalid)); got != 1 {
		t.Errorf("invalid loads = %v, want 1", got)
	}

	update(map[string]string{"parallelism": "5", "navColor": "blue"})
	if got := (<-changes).Parallelism; got != 5 {
		t.Errorf("parallelism after a valid edit = %d, want 5", got)
	}
	if n := strings.Count(logs.String(), "key=navColor"); n != 1 {
		t.Errorf("navColor logged %d times, want once:\n%s", n, logs.String())
	}
	if got := testutil.ToFloat64(w.metrics.unsupported); got != 1 {
		t.Errorf("unsupported keys gauge = %v, want 1", got)
	}

	if err := kube.CoreV1().ConfigMaps("argo").Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := (<-changes).Parallelism; got != 0 {
		t.Errorf("parallelism after deletion = %d, want the default 0", got)
	}
}

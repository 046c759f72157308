package controllerconfig

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/wfguard/wfguard/internal/lockedbuffer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWatcher: a valid version comes into force and is announced; an invalid edit keeps it, with one
// Warning Event and a metric; an unsupported key is logged once; a deletion (also of an invalid version)
// brings back the defaults.
func TestWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	kube := fake.NewClientset(configMap(map[string]string{"parallelism": "2", "navColor": "red"}))
	recorder := record.NewFakeRecorder(10)
	reg := prometheus.NewRegistry()
	var logs lockedbuffer.Buffer
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

	// Invalid, then deleted: the last valid config stays in force (argo exits; the defaults would drop the
	// ConfigMap's fences).
	update(map[string]string{"parallelism": "oops again"})
	select {
	case <-recorder.Events:
	case <-time.After(30 * time.Second):
		t.Fatal("no ConfigMapInvalid event for the second invalid edit")
	}
	if w.Current().Parallelism != 5 {
		t.Errorf("parallelism after a second invalid edit = %d, want the last valid 5", w.Current().Parallelism)
	}
	if err := kube.CoreV1().ConfigMaps("argo").Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning ConfigMapDeleted ") || !strings.Contains(e, "last valid config stays in force") {
			t.Errorf("event = %q, want a ConfigMapDeleted Warning", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no ConfigMapDeleted event")
	}
	if got := testutil.ToFloat64(w.metrics.loads.WithLabelValues(resultDeleted)); got != 1 {
		t.Errorf("deleted loads = %v, want 1", got)
	}
	if got := w.Current().Parallelism; got != 5 {
		t.Errorf("parallelism after deletion = %d, want the last valid 5 kept", got)
	}
	select {
	case c := <-changes:
		t.Errorf("a config was published after the deletion (parallelism %d): the last valid one must stay", c.Parallelism)
	default:
	}
}

// TestWatcherAtStart: at start there is no last valid config to keep, so an invalid ConfigMap fails the
// start instead of running with the defaults (no instanceID: every instance's workflows); a read error is
// retried, never taken for an absent ConfigMap; a valid version is in force when WaitForSync returns.
func TestWatcherAtStart(t *testing.T) {
	for _, tc := range []struct {
		sentence       string
		objects        []runtime.Object
		failedReads    int
		wantErr        []string
		wantInstanceID string
		wantLog        string
	}{
		{sentence: "an invalid ConfigMap fails the start, naming itself and the parse error",
			objects: []runtime.Object{configMap(map[string]string{"instanceID": "a", "workflowDefaults": "metadata: [unclosed\nspec: {}\n"})},
			wantErr: []string{"the controller ConfigMap argo/workflow-controller-configmap is invalid", "does not start", "yaml"},
			wantLog: "the controller does not start with it"},
		{sentence: "a valid ConfigMap's instanceID is in force when WaitForSync returns",
			objects: []runtime.Object{configMap(map[string]string{"instanceID": "a"})}, wantInstanceID: "a"},
		{sentence: "an absent ConfigMap starts with the defaults"},
		{sentence: "failed reads are logged and retried, never taken for an absent ConfigMap",
			objects: []runtime.Object{configMap(map[string]string{"instanceID": "a"})}, failedReads: 2, wantInstanceID: "a",
			wantLog: "cannot read the controller ConfigMap; retrying, and not starting until it is read"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			kube := fake.NewClientset(tc.objects...)
			failures := tc.failedReads
			kube.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failures == 0 {
					return false, nil, nil
				}
				failures--
				return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
			})
			var logs lockedbuffer.Buffer
			w, err := NewWatcher(Options{Kube: kube, Namespace: "argo", Log: slog.New(slog.NewTextHandler(&logs, nil)), Recorder: record.NewFakeRecorder(10)})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { defer close(done); w.Run(ctx) }()
			defer func() { cancel(); <-done }()
			waitCtx, stop := context.WithTimeout(ctx, 30*time.Second)
			defer stop()
			err = w.WaitForSync(waitCtx)
			switch {
			case len(tc.wantErr) == 0 && err != nil:
				t.Fatalf("WaitForSync = %v, want the start to go on", err)
			case len(tc.wantErr) > 0 && err == nil:
				t.Fatalf("WaitForSync succeeded with instanceID %q in force, want an error", w.Current().InstanceID)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("WaitForSync = %q, want it to say %q", err, want)
				}
			}
			if err == nil && w.Current().InstanceID != tc.wantInstanceID {
				t.Errorf("instanceID in force = %q, want %q", w.Current().InstanceID, tc.wantInstanceID)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("the log lacks %q:\n%s", tc.wantLog, logs.String())
			}
		})
	}
}

package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestTheAPIServerIsProfiledThroughTheAdminClientOnlyWhenTheRunKeepsItsLogs(t *testing.T) {
	var (
		mu    sync.Mutex
		asked string
	)
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = r.URL.RequestURI()
		mu.Unlock()
		if r.URL.Path != "/debug/pprof/profile" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer admin" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte("a profile"))
	}))
	defer apiserver.Close()
	envWith := func(logDir, token string) *env {
		return &env{opts: Options{LogDir: logDir}, kube: kubernetes.NewForConfigOrDie(&rest.Config{Host: apiserver.URL, BearerToken: token})}
	}
	dir := t.TempDir()
	ctx := context.Background()

	t.Run("a run that keeps no logs takes no profile", func(t *testing.T) {
		if c := envWith("", "admin").startAPIServerCPUProfile(ctx, filepath.Join(dir, "none.pprof")); c != nil {
			t.Fatal("a profile was started without --logs")
		}
		if err := (*profileCapture)(nil).wait(); err != nil {
			t.Fatalf("waiting on no capture: %v", err)
		}
	})
	t.Run("a run that keeps its logs saves the API server's profile of cpuProfileSeconds", func(t *testing.T) {
		path := filepath.Join(dir, "ns-apiserver-cpu.pprof")
		if err := envWith(dir, "admin").startAPIServerCPUProfile(ctx, path).wait(); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != "a profile" {
			t.Fatalf("saved %q (%v), want the API server's answer", got, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := "/debug/pprof/profile?seconds=" + strconv.Itoa(cpuProfileSeconds); asked != want {
			t.Fatalf("asked for %q, want %q", asked, want)
		}
	})
	t.Run("a refused profile is the run's error, naming the API server", func(t *testing.T) {
		err := envWith(dir, "someone").startAPIServerCPUProfile(ctx, filepath.Join(dir, "refused.pprof")).wait()
		if err == nil || !strings.Contains(err.Error(), "profiling the API server") {
			t.Fatalf("err = %v, want the refusal named", err)
		}
		if _, statErr := os.Stat(filepath.Join(dir, "refused.pprof")); !os.IsNotExist(statErr) {
			t.Fatalf("a refused profile left a file: %v", statErr)
		}
	})
}

func TestTheActionsScenarioKeepsTheControllersMetricsOnlyWithItsLogs(t *testing.T) {
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("wfguard_reconcile_total 3\n"))
	}))
	defer metrics.Close()
	dir := t.TempDir()
	ctx := context.Background()
	cases := []struct {
		sentence string
		keep     bool
		url      string
		want     string // "": no file
	}{
		{"a run that keeps its logs saves the text of /metrics", true, metrics.URL, "wfguard_reconcile_total 3\n"},
		{"a run without logs saves nothing", false, metrics.URL, ""},
		{"a controller that serves no metrics leaves nothing to save", true, "", ""},
	}
	for i, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			path := filepath.Join(dir, strconv.Itoa(i)+"-metrics.txt")
			if err := (&process{metricsURL: tc.url}).saveMetrics(ctx, tc.keep, path); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if tc.want == "" {
				if !os.IsNotExist(err) {
					t.Fatalf("a file was saved: %q (%v)", got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("saved %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestProfilingServesPprofOnTheMetricsPortOnlyWhenAskedFor(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		args     []string
		want     int
	}{
		{"without --profiling, /debug/pprof/ is not found", nil, http.StatusNotFound},
		{"with --profiling, /debug/pprof/ lists the profiles", []string{"--profiling"}, http.StatusOK},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			f, err := parseControllerFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatalf("parsing %v: %v", tc.args, err)
			}
			srv := httptest.NewServer(metricsMux(prometheus.NewRegistry(), f.profiling))
			defer srv.Close()
			for path, want := range map[string]int{"/debug/pprof/": tc.want, "/debug/pprof/heap": tc.want, "/metrics": http.StatusOK} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s: status %d, want %d", path, resp.StatusCode, want)
				}
				if path == "/debug/pprof/" && want == http.StatusOK && !strings.Contains(string(body), "heap") {
					t.Errorf("GET %s: index does not list the heap profile:\n%s", path, body)
				}
			}
		})
	}
}

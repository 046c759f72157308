package argometrics

import (
	"net/http"
	"strconv"
	"strings"

	"k8s.io/utils/clock"
)

// RoundTripper counts and times each Kubernetes API request (k8s_request_total, k8s_request_duration),
// labelled as argo labels them. Use it as rest.Config.Wrap(m.RoundTripper(clock)).
func (m *Metrics) RoundTripper(clk clock.PassiveClock) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: next, m: m, clock: clk}
	}
}

type countingTransport struct {
	next  http.RoundTripper
	m     *Metrics
	clock clock.PassiveClock
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := t.clock.Now()
	resp, err := t.next.RoundTrip(r)
	if resp == nil {
		return resp, err // argo counts answered requests only
	}
	verb, kind := describeRequest(r.Method, r.URL.Path, r.URL.Query().Has("watch"))
	code := strconv.Itoa(resp.StatusCode)
	t.m.requests.WithLabelValues(kind, verb, code).Inc()
	t.m.requestDuration.WithLabelValues(kind, verb, code).Observe(t.clock.Since(start).Seconds())
	return resp, err
}

// describeRequest names an API request's verb (Get, List, Watch, Create, Update, Patch, Delete,
// DeleteCollection) and kind (the resource, "pods/log" for a subresource) from its method and path, as
// argo does: after the version segment the path alternates resource and name, with an optional
// "namespaces/NS" pair first.
func describeRequest(method, path string, watch bool) (verb, kind string) {
	segs := pathAfterVersion(path)
	if len(segs) > 2 && segs[0] == "namespaces" {
		segs = segs[2:] // a namespaced resource; "namespaces" and "namespaces/NS" are themselves the resource
	}
	named := len(segs) >= 2 // resource name
	sub := len(segs) >= 3   // resource name subresource
	switch method {
	case http.MethodGet:
		verb = "List"
		if watch {
			verb = "Watch"
		} else if named {
			verb = "Get"
		}
	case http.MethodPost:
		verb = "Create"
	case http.MethodPut:
		verb = "Update"
	case http.MethodPatch:
		verb = "Patch"
	case http.MethodDelete:
		verb = "Delete"
		if !named {
			verb = "DeleteCollection"
		}
	}
	switch {
	case len(segs) == 0 || verb == "":
		kind = "Unknown"
	case sub:
		kind = segs[0] + "/" + segs[2]
	default:
		kind = segs[0]
	}
	return verb, kind
}

// pathAfterVersion is the path's segments after /api/v1 or /apis/GROUP/VERSION.
func pathAfterVersion(path string) []string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		return segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		return segs[3:]
	}
	return nil
}

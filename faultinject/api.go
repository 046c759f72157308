package faultinject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// WrapTransport is a rest.Config.WrapTransport: API calls matching an "api" rule are delayed, failed with a
// real metav1.Status body, or have their connection reset. Leader-election Leases are exempt unless a rule
// names resource=leases.
func (in *Injector) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{in: in, next: rt}
}

type roundTripper struct {
	in   *Injector
	next http.RoundTripper
}

var errReset = errors.New("faultinject: connection reset by peer")

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	call := RequestAttributes(req)
	if call["resource"] == "leases" && !t.in.namesLeases() {
		return t.next.RoundTrip(req)
	}
	_, action, ok := t.in.decide(SiteAPI, "", call, func() string { return workflowOfRequest(req, call) })
	if !ok {
		return t.next.RoundTrip(req)
	}
	switch action.Kind {
	case ActionDelay:
		select {
		case <-t.in.clock.After(action.Delay):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return t.next.RoundTrip(req)
	case ActionReset:
		return nil, errReset
	default:
		return statusResponse(req, action), nil
	}
}

// workflowOfRequest ties an API call to its workflow: a call on a workflow names it, a created object
// carries the workflow label in its body. Other calls cannot be tied ("").
func workflowOfRequest(req *http.Request, call map[string]string) string {
	ns := call["namespace"]
	if ns == "" {
		return ""
	}
	if strings.HasPrefix(call["resource"], "workflows") && call["name"] != "" {
		return ns + "/" + call["name"]
	}
	if call["verb"] != "create" || req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 4<<20))
	if err != nil {
		return ""
	}
	var labels map[string]string
	// Built-in kinds may come as protobuf; custom resources are always JSON.
	if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil); err == nil {
		if o, err := meta.Accessor(obj); err == nil {
			labels = o.GetLabels()
		}
	} else {
		var partial metav1.PartialObjectMetadata
		if json.Unmarshal(data, &partial) == nil {
			labels = partial.Labels
		}
	}
	if wf := labels[workflowLabel]; wf != "" {
		return ns + "/" + wf
	}
	return ""
}

func (in *Injector) namesLeases() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.rules {
		if r.Match["resource"] == "leases" {
			return true
		}
	}
	return false
}

// statusResponse is the API server's own shape of an error: a metav1.Status with reason and code.
func statusResponse(req *http.Request, a Action) *http.Response {
	reasons := map[int]metav1.StatusReason{
		409: metav1.StatusReasonConflict, 429: metav1.StatusReasonTooManyRequests, 500: metav1.StatusReasonInternalError,
		503: metav1.StatusReasonServiceUnavailable, 504: metav1.StatusReasonTimeout, 404: metav1.StatusReasonNotFound,
		403: metav1.StatusReasonForbidden,
	}
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(a.Code), Reason: reasons[a.Code],
		Message: fmt.Sprintf("injected fault: %d for %s %s", a.Code, req.Method, req.URL.Path),
	}
	header := http.Header{"Content-Type": []string{"application/json"}}
	if a.Code == 429 && a.Delay > 0 {
		header.Set("Retry-After", strconv.Itoa(max(1, int(a.Delay.Seconds()))))
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(max(1, int(a.Delay.Seconds())))}
	}
	body, _ := json.Marshal(st)
	return &http.Response{StatusCode: a.Code, Status: fmt.Sprintf("%d %s", a.Code, http.StatusText(a.Code)), Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// RequestAttributes reads verb, resource, namespace and name from a Kubernetes API request path.
func RequestAttributes(req *http.Request) map[string]string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return map[string]string{"verb": strings.ToLower(req.Method)}
	}
	call := map[string]string{}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		call["namespace"] = parts[1]
		parts = parts[2:]
	}
	if len(parts) > 0 {
		call["resource"] = parts[0]
	}
	if len(parts) > 1 {
		call["name"] = parts[1]
	}
	if len(parts) > 2 {
		call["resource"] += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			call["verb"] = "watch"
		case call["name"] != "":
			call["verb"] = "get"
		default:
			call["verb"] = "list"
		}
	case http.MethodPost:
		call["verb"] = "create"
	case http.MethodPut:
		call["verb"] = "update"
	case http.MethodPatch:
		call["verb"] = "patch"
	case http.MethodDelete:
		call["verb"] = "delete"
		if call["name"] == "" {
			call["verb"] = "deletecollection"
		}
	}
	return call
}

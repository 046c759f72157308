package sharding_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// write is one mutating API request a controller made: its verb and the object it names.
type write struct {
	verb, namespace, resource, name string
	// selector is a collection delete's label selector (it has no name).
	selector string
}

func (w write) String() string {
	if w.selector != "" {
		return fmt.Sprintf("%s %s/%s?labelSelector=%s", w.verb, w.namespace, w.resource, w.selector)
	}
	return fmt.Sprintf("%s %s/%s/%s", w.verb, w.namespace, w.resource, w.name)
}

// selects reports whether a collection delete selects only objects labelled with both label=value pairs.
func (w write) selects(pairs ...string) bool {
	if w.selector == "" {
		return false
	}
	terms := strings.Split(w.selector, ",")
	for _, p := range pairs {
		if !slices.Contains(terms, p) {
			return false
		}
	}
	return true
}

// writeLog records every mutating request made through the configs it wraps.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

// config is base with every request recorded.
func (l *writeLog) config(base *rest.Config) *rest.Config {
	c := rest.CopyConfig(base)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				l.record(req)
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// record names the object of a request: from its path, or, for a create, from its body (an Event's from
// the object it is about).
func (l *writeLog) record(req *http.Request) {
	w := write{verb: req.Method}
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i, s := range segs {
		if s == "namespaces" && i+2 < len(segs) {
			w.namespace, w.resource = segs[i+1], segs[i+2]
			if i+3 < len(segs) {
				w.name = segs[i+3]
			}
			break
		}
	}
	if w.resource == "" && len(segs) > 0 {
		w.resource = segs[len(segs)-1] // cluster-scoped or a namespace itself
	}
	if w.name == "" && req.Method == http.MethodDelete {
		w.selector = req.URL.Query().Get("labelSelector")
	}
	if w.name == "" {
		w.name = bodyName(req)
	}
	l.mu.Lock()
	l.writes = append(l.writes, w)
	l.mu.Unlock()
}

func bodyName(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return ""
	}
	// An Event is named by its object; anything else by its name, else its generateName.
	var involved, name, generateName string
	if decoded, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil); err == nil {
		// Kubernetes' own kinds: protobuf (the controller's default) or JSON.
		if event, ok := decoded.(*corev1.Event); ok {
			involved = event.InvolvedObject.Name
		}
		if o, err := meta.Accessor(decoded); err == nil {
			name, generateName = o.GetName(), o.GetGenerateName()
		}
	} else {
		// argo's kinds and patches: JSON.
		var obj struct {
			Metadata struct {
				Name, GenerateName string
			}
			InvolvedObject struct{ Name string }
		}
		if json.NewDecoder(bytes.NewReader(data)).Decode(&obj) != nil {
			return ""
		}
		involved, name, generateName = obj.InvolvedObject.Name, obj.Metadata.Name, obj.Metadata.GenerateName
	}
	switch {
	case involved != "":
		return involved
	case name != "":
		return name
	}
	return generateName
}

// outside returns the writes that do not satisfy ok, and how many writes there were.
func (l *writeLog) outside(ok func(write) bool) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for _, w := range l.writes {
		if !ok(w) {
			bad = append(bad, w.String())
		}
	}
	return bad, len(l.writes)
}

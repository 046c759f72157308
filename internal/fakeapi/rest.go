package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Config is a rest.Config whose requests under /apis client answers: get, list, watch, create, update (a
// subresource's too) and delete.
func Config(client dynamic.Interface) *rest.Config {
	return &rest.Config{Host: "http://fakeapi.invalid", Transport: server{client: client}}
}

// server answers REST requests from a dynamic client, as JSON, errors as the API server's Status.
type server struct{ client dynamic.Interface }

func (s server) RoundTrip(req *http.Request) (*http.Response, error) {
	r, err := routeOf(req.URL.Path)
	if err != nil {
		return answerError(apierrors.NewBadRequest(err.Error()))
	}
	if req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true" {
		return s.watch(req, r)
	}
	obj, err := s.serve(req, r)
	if err != nil {
		return answerError(err)
	}
	return answer(http.StatusOK, obj)
}

// route is what a request's path names.
type route struct {
	gvr                          schema.GroupVersionResource
	namespace, name, subresource string
}

func routeOf(path string) (route, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 4 || parts[0] != "apis" {
		return route{}, fmt.Errorf("the fake API serves /apis/<group>/<version>/... only, not %s", path)
	}
	r := route{gvr: schema.GroupVersionResource{Group: parts[1], Version: parts[2]}}
	rest := parts[3:]
	if rest[0] == "namespaces" && len(rest) >= 3 {
		r.namespace, rest = rest[1], rest[2:]
	}
	r.gvr.Resource = rest[0]
	if len(rest) > 1 {
		r.name = rest[1]
	}
	if len(rest) > 2 {
		r.subresource = strings.Join(rest[2:], "/")
	}
	return r, nil
}

// serve makes the dynamic client's call the request names.
func (s server) serve(req *http.Request, r route) (any, error) {
	client := s.client.Resource(r.gvr).Namespace(r.namespace)
	ctx, query := req.Context(), req.URL.Query()
	var sub []string
	if r.subresource != "" {
		sub = []string{r.subresource}
	}
	switch {
	case req.Method == http.MethodGet && r.name == "":
		return client.List(ctx, metav1.ListOptions{LabelSelector: query.Get("labelSelector"), FieldSelector: query.Get("fieldSelector")})
	case req.Method == http.MethodGet:
		return client.Get(ctx, r.name, metav1.GetOptions{}, sub...)
	case req.Method == http.MethodPost:
		return withBody(req, func(obj *unstructured.Unstructured) (any, error) {
			return client.Create(ctx, obj, metav1.CreateOptions{FieldManager: query.Get("fieldManager")}, sub...)
		})
	case req.Method == http.MethodPut:
		return withBody(req, func(obj *unstructured.Unstructured) (any, error) {
			return client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: query.Get("fieldManager")}, sub...)
		})
	case req.Method == http.MethodDelete:
		return deleteNamed(req, func(opts metav1.DeleteOptions) error { return client.Delete(ctx, r.name, opts, sub...) })
	}
	return nil, apierrors.NewMethodNotSupported(r.gvr.GroupResource(), req.Method)
}

// watch streams the dynamic client's watch events of the objects the label selector selects (the fake's
// own watch does not select) as the API server does, one JSON event after another, until the watch ends or
// the request is cancelled.
func (s server) watch(req *http.Request, r route) (*http.Response, error) {
	query := req.URL.Query()
	selector, err := labels.Parse(query.Get("labelSelector"))
	if err != nil {
		return answerError(apierrors.NewBadRequest(err.Error()))
	}
	w, err := s.client.Resource(r.gvr).Namespace(r.namespace).Watch(req.Context(), metav1.ListOptions{
		LabelSelector: query.Get("labelSelector"), FieldSelector: query.Get("fieldSelector"), ResourceVersion: query.Get("resourceVersion")})
	if err != nil {
		return answerError(err)
	}
	body, out := io.Pipe()
	go func() {
		defer w.Stop()
		encoder := json.NewEncoder(out)
		for {
			select {
			case <-req.Context().Done():
				_ = out.CloseWithError(req.Context().Err())
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					_ = out.Close()
					return
				}
				if o, isObject := e.Object.(metav1.Object); isObject && !selector.Matches(labels.Set(o.GetLabels())) {
					continue
				}
				if err := encoder.Encode(map[string]any{"type": e.Type, "object": e.Object}); err != nil {
					return // the client stopped reading
				}
			}
		}
	}()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
}

// withBody decodes the request's body, then calls.
func withBody(req *http.Request, call func(*unstructured.Unstructured) (any, error)) (any, error) {
	data, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the request's body: %v", err))
	}
	return call(obj)
}

// deleteNamed deletes with the options in the request's body, if any, answering as the API server does.
func deleteNamed(req *http.Request, del func(metav1.DeleteOptions) error) (any, error) {
	var opts metav1.DeleteOptions
	if req.Body != nil {
		data, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(data) > 0 && json.Unmarshal(data, &opts) != nil {
			return nil, apierrors.NewBadRequest("decoding the delete options")
		}
	}
	if err := del(opts); err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}, nil
}

// answerError answers err as the API server's Status; an error that is not the API's is an internal error.
func answerError(err error) (*http.Response, error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return answer(int(s.Code), &s)
}

func answer(code int, obj any) (*http.Response, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("fake API: encoding the answer: %w", err)
	}
	return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}, nil
}

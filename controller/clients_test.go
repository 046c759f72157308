package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

func TestTheClientsOfKubernetesKindsSpeakProtobufUnlessToldJSON(t *testing.T) {
	base := &rest.Config{Host: "https://example", QPS: 7}
	for _, tc := range []struct {
		sentence             string
		contentType          string
		wantSend, wantAccept string
	}{
		{"by default requests are protobuf and JSON answers are still read", "", runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON},
		{"protobuf named explicitly is the same", runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON},
		{"JSON asked for is JSON both ways", runtime.ContentTypeJSON, runtime.ContentTypeJSON, runtime.ContentTypeJSON},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			got := KubeClientConfig(base, tc.contentType)
			if got.ContentType != tc.wantSend || got.AcceptContentTypes != tc.wantAccept {
				t.Errorf("content type %q, accept %q; want %q, %q", got.ContentType, got.AcceptContentTypes, tc.wantSend, tc.wantAccept)
			}
			if got.Host != base.Host || got.QPS != base.QPS {
				t.Errorf("the rest of the config changed: %+v", got)
			}
			if base.ContentType != "" || base.AcceptContentTypes != "" {
				t.Errorf("the shared config was changed: %+v", base)
			}
		})
	}
}

// Each client NewClients builds goes through config's wrapped transport (request metrics, injected faults),
// and only Kubernetes' own kinds are asked for in protobuf.
func TestEveryClientGoesThroughTheConfigsTransportAndOnlyKubesKindsSpeakProtobuf(t *testing.T) {
	var mu sync.Mutex
	accepts := map[string]string{} // request path → its Accept header, as the wrapper saw it
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }))
	defer server.Close()
	config := &rest.Config{Host: server.URL}
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			accepts[r.URL.Path] = r.Header.Get("Accept")
			mu.Unlock()
			return next.RoundTrip(r)
		})
	})
	clients, err := NewClients(config, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		sentence   string
		read       func(context.Context) error
		path       string
		wantAccept string
	}{
		{"the kube client asks for protobuf, JSON accepted", func(ctx context.Context) error {
			_, err := clients.Kube.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			return err
		}, "/api/v1/namespaces/ns/pods/p", runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON},
		{"the argo client asks for JSON", func(ctx context.Context) error {
			_, err := clients.Argo.ArgoprojV1alpha1().WorkflowTaskResults("ns").Get(ctx, "r", metav1.GetOptions{})
			return err
		}, "/apis/argoproj.io/v1alpha1/namespaces/ns/workflowtaskresults/r", runtime.ContentTypeJSON},
		{"the dynamic client asks for JSON", func(ctx context.Context) error {
			_, err := clients.Dynamic.Resource(workflowsResource).Namespace("ns").Get(ctx, "wf", metav1.GetOptions{})
			return err
		}, "/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/wf", runtime.ContentTypeJSON},
		{"the WorkflowAction client asks for JSON", func(ctx context.Context) error {
			_, err := clients.Actions.Namespace("ns").Get(ctx, "a", metav1.GetOptions{})
			return err
		}, "/apis/argoproj.io/v1alpha1/namespaces/ns/workflowactions/a", runtime.ContentTypeJSON},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if err := tc.read(ctx); err == nil {
				t.Fatal("the test server answers 404 to everything, yet the read succeeded")
			}
			mu.Lock()
			defer mu.Unlock()
			got, seen := accepts[tc.path]
			if !seen || !strings.HasPrefix(got, tc.wantAccept) {
				t.Errorf("request to %s through the wrapper: seen %v, Accept %q; want Accept %q (seen: %v)", tc.path, seen, got, tc.wantAccept, accepts)
			}
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewRefusesClientsWithOneMissing(t *testing.T) {
	_, err := New(Clients{}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no Kube, Argo, Dynamic, WorkflowsREST, Actions client") {
		t.Fatalf("New without clients = %v, want every missing client named", err)
	}
}

// BenchmarkDecodingAStepPod decodes a step pod, as a pod watch event delivers it, in each content type the
// controller may ask for.
func BenchmarkDecodingAStepPod(b *testing.B) {
	data, err := os.ReadFile("podspec/testdata/script.golden.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		b.Fatal(err)
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7", HostIP: "10.0.0.1"}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	codec := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)
	jsonData, err := runtime.Encode(codec, &pod)
	if err != nil {
		b.Fatal(err)
	}
	protoData, err := runtime.Encode(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), &pod)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"json", jsonData}, {"protobuf", protoData}} {
		b.Run(tc.name, func(b *testing.B) {
			decoder := scheme.Codecs.UniversalDeserializer()
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				if _, _, err := decoder.Decode(tc.data, nil, &corev1.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

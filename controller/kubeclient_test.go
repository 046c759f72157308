package controller

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

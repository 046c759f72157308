package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// KubeClientConfig is config for the clients of Kubernetes' own kinds: contentType for requests ("":
// protobuf), still accepting JSON (what an injected fault or a proxy may answer with).
func KubeClientConfig(config *rest.Config, contentType string) *rest.Config {
	out := rest.CopyConfig(config)
	if contentType == "" {
		contentType = runtime.ContentTypeProtobuf
	}
	out.ContentType = contentType
	out.AcceptContentTypes = contentType
	if contentType != runtime.ContentTypeJSON {
		out.AcceptContentTypes += "," + runtime.ContentTypeJSON
	}
	return out
}

package bench

import (
	"net/http"
	"net/url"

	"k8s.io/client-go/rest"
)

// ownConnection is a copy of c whose clients dial their own connections to the API server. client-go
// shares one transport, so one HTTP/2 connection, among all configs with the same TLS settings: the
// observer, the simulated node, the raw client and every controller's proxy would otherwise queue their
// requests and watch events on one TCP stream, and under load each would see the others' events late. A
// config with a Proxy func is never cached (client-go cannot compare funcs), so it gets a transport of its own.
func ownConnection(c *rest.Config) *rest.Config {
	out := rest.CopyConfig(c)
	out.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil } // dial the API server directly
	return out
}

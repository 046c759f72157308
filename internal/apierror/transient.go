package apierror

import (
	"errors"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// transientMessages are failures that surface only as text: the API server passing on etcd trouble or a
// quota evaluation under load, and connections the transport lost.
var transientMessages = []string{
	"etcdserver: leader changed", "etcdserver: request timed out", "etcdserver: too many requests",
	"resource quota evaluation timed out", "Operation cannot be fulfilled on resourcequota",
	"connection reset by peer", "connection refused", "connection timed out", "i/o timeout",
	"TLS handshake timeout", "http2: client connection lost", "http2: server sent GOAWAY", "Connection closed by foreign host",
	"invalid connection",
}

// Transient reports whether err is the server's or the network's failure rather than the request's, so the
// same request may succeed later: 500, 503, 504, 429, timeouts, an exceeded quota, a lost connection. It
// counts what argo's controller counts as transient, and never logs: the caller says what it retries.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	msg := err.Error()
	if apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota") {
		return true // the quota frees up as other pods end
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var urlErr *url.Error
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout()) ||
		(errors.As(err, &urlErr) && strings.Contains(msg, "EOF")) {
		return true
	}
	for _, m := range transientMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

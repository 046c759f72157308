package apierror

import (
	"errors"
	"fmt"
	"net"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransient(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		sentence string
		err      error
		want     bool
	}{
		{"no error is not transient", nil, false},
		{"a 500 from the API server is transient", apierrors.NewInternalError(errors.New("boom")), true},
		{"a 500 wrapped with what was being done is transient", fmt.Errorf("creating pod p: %w", apierrors.NewInternalError(errors.New("boom"))), true},
		{"a 503 is transient", apierrors.NewServiceUnavailable("try later"), true},
		{"a 504 server timeout is transient", apierrors.NewServerTimeout(pods, "create", 1), true},
		{"a 429 is transient", apierrors.NewTooManyRequests("slow down", 1), true},
		{"an exceeded quota is transient", apierrors.NewForbidden(pods, "p", errors.New("exceeded quota: compute")), true},
		{"another forbidden is not", apierrors.NewForbidden(pods, "p", errors.New("no")), false},
		{"an etcd leader change is transient", errors.New("etcdserver: leader changed"), true},
		{"a refused connection is transient", &net.OpError{Op: "dial", Err: errors.New("connect: connection refused")}, true},
		{"an invalid object is not", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), false},
		{"already exists is not", apierrors.NewAlreadyExists(pods, "p"), false},
		{"not found is not", apierrors.NewNotFound(pods, "p"), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v", tc.sentence, tc.err, got)
		}
	}
}

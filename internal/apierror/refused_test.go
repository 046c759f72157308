package apierror

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestWritesThatCanNeverSucceedAreRefused(t *testing.T) {
	wf := schema.GroupResource{Group: "argoproj.io", Resource: "workflows"}
	for _, tc := range []struct {
		sentence string
		err      error
		kind     string
		refused  bool
	}{
		{"no error is not refused", nil, "", false},
		{"413 from the API server is too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), TooLarge, true},
		{"etcd's request is too large (a 500) is too large", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), TooLarge, true},
		{"gRPC ResourceExhausted is too large",
			apierrors.NewInternalError(errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (3000000 vs. 2097152)")), TooLarge, true},
		{"422 Invalid is invalid", apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "Workflow"}, "w", field.ErrorList{field.Invalid(field.NewPath("status"), "x", "bad")}), Invalid, true},
		{"a conflict is transient", apierrors.NewConflict(wf, "w", errors.New("changed")), "", false},
		{"a timeout is transient", apierrors.NewServerTimeout(wf, "update", 1), "", false},
		{"too many requests is transient", apierrors.NewTooManyRequests("slow down", 1), "", false},
		{"a connection refused is transient", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), "", false},
		{"an internal error without a size cause is transient", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), "", false},
		{"forbidden is not refused for good (RBAC can change)", apierrors.NewForbidden(wf, "w", errors.New("no")), "", false},
	} {
		kind, refused := Refused(tc.err)
		if kind != tc.kind || refused != tc.refused {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", tc.sentence, kind, refused, tc.kind, tc.refused)
		}
	}
}

package controller

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wfguard/wfguard/extstatus"
)

func TestWriteErrorsThatCanNeverSucceedArePermanent(t *testing.T) {
	wf := schema.GroupResource{Group: "argoproj.io", Resource: "workflows"}
	for _, tc := range []struct {
		sentence  string
		err       error
		kind      string
		permanent bool
	}{
		{"our own size check is too large", fmt.Errorf("x: %w", extstatus.ErrTooLarge), writeTooLarge, true},
		{"413 from the API server is too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), writeTooLarge, true},
		{"etcd's request is too large (a 500) is too large", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), writeTooLarge, true},
		{"gRPC ResourceExhausted is too large",
			apierrors.NewInternalError(errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (3000000 vs. 2097152)")), writeTooLarge, true},
		{"422 Invalid is invalid", apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "Workflow"}, "w", field.ErrorList{field.Invalid(field.NewPath("status"), "x", "bad")}), writeInvalid, true},
		{"a conflict is transient", apierrors.NewConflict(wf, "w", errors.New("changed")), "", false},
		{"a timeout is transient", apierrors.NewServerTimeout(wf, "update", 1), "", false},
		{"too many requests is transient", apierrors.NewTooManyRequests("slow down", 1), "", false},
		{"a connection refused is transient", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), "", false},
		{"an internal error without a size cause is transient", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), "", false},
		{"forbidden is not a status error (RBAC can change)", apierrors.NewForbidden(wf, "w", errors.New("no")), "", false},
	} {
		kind, permanent := classifyWriteError(tc.err)
		if kind != tc.kind || permanent != tc.permanent {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", tc.sentence, kind, permanent, tc.kind, tc.permanent)
		}
	}
}

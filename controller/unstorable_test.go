package controller

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
		{"what the API server refuses is permanent (apierror.Refused)", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), writeTooLarge, true},
		{"what it may accept later is not", apierrors.NewConflict(wf, "w", errors.New("changed")), "", false},
	} {
		kind, permanent := classifyWriteError(tc.err)
		if kind != tc.kind || permanent != tc.permanent {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", tc.sentence, kind, permanent, tc.kind, tc.permanent)
		}
	}
}

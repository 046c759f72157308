package actions

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestTheCreatorLabelNamesTheRequesterAsALabelValue(t *testing.T) {
	for _, tc := range []struct{ sentence, user, want string }{
		{"a plain user name is kept", "alice", "alice"},
		{"a ServiceAccount's colons become dashes", "system:serviceaccount:argo:argo-server", "system-serviceaccount-argo-argo-server"},
		{"an e-mail address keeps its dots", "alice@example.com", "alice-example.com"},
		{"a name over 63 characters is cut and ends alphanumeric", strings.Repeat("a", 62) + "-tail", strings.Repeat("a", 62)},
		{"a name of nothing but symbols gives no label", "::", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			kube.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, &authv1.SelfSubjectReview{Status: authv1.SelfSubjectReviewStatus{UserInfo: authv1.UserInfo{Username: tc.user}}}, nil
			})
			labels, err := CreatorLabels(context.Background(), kube.AuthenticationV1())
			if err != nil {
				t.Fatal(err)
			}
			if got := labels[common.LabelKeyCreator]; got != tc.want || (tc.want == "" && labels != nil) {
				t.Errorf("labels = %v, want creator %q", labels, tc.want)
			}
		})
	}
}

func TestARefusedCreateMapsAsArgoServerMapsKubernetesErrors(t *testing.T) {
	gr := schema.GroupResource{Group: "argoproj.io", Resource: "workflowactions"}
	for _, tc := range []struct {
		sentence string
		err      error
		want     Code
	}{
		{"RBAC or a Forbidden admission policy is PermissionDenied", apierrors.NewForbidden(gr, "", nil), PermissionDenied},
		{"credentials the API server refuses are Unauthenticated", apierrors.NewUnauthorized("no"), Unauthenticated},
		{"a spec the schema or a CEL rule refuses is InvalidArgument", apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "WorkflowAction"}, "", nil), InvalidArgument},
		{"a bad request is InvalidArgument", apierrors.NewBadRequest("no"), InvalidArgument},
		{"a server error is Unavailable", apierrors.NewInternalError(errors.New("etcd down")), Unavailable},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if got := createRefusedCode(tc.err); got != tc.want {
				t.Errorf("code = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEveryOutcomeReasonHasTheDesignsCode(t *testing.T) {
	for reason, want := range map[string]Code{
		ReasonApplied: OK, ReasonNothingToResume: InvalidArgument, ReasonNothingToStop: InvalidArgument,
		ReasonInvalidNodeFieldSelector: InvalidArgument, ReasonUnknownAction: InvalidArgument, ReasonMissingOutputParameter: InvalidArgument,
		ReasonInvalidOutputParameters: InvalidArgument, ReasonOutcomeNotStorable: InvalidArgument, ReasonInvalidParameter: InvalidArgument,
		ReasonWorkflowNotFound: NotFound, ReasonWorkflowCompleted: FailedPrecondition, ReasonWorkflowNotCompleted: FailedPrecondition,
		ReasonNothingToRetry: FailedPrecondition, ReasonInvalidNodeTree: FailedPrecondition, ReasonRetryOverridesNotAuthorized: PermissionDenied,
	} {
		if got := CodeOf(reason); got != want {
			t.Errorf("CodeOf(%s) = %s, want %s", reason, got, want)
		}
	}
}

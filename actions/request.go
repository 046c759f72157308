package actions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	authv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/wfguard/wfguard/actions/v1alpha1"
)

// Code classifies an action's outcome the way gRPC status codes do, so callers can branch on it.
type Code int

// Codes (and the CLI's exit codes).
const (
	OK                 Code = 0
	InvalidArgument    Code = 3
	FailedPrecondition Code = 4
	NotFound           Code = 5
	DeadlineExceeded   Code = 6
	Unavailable        Code = 7
	// PermissionDenied: the API server refused to create the action (RBAC, or an admission policy whose
	// reason is Forbidden, such as config/policy's deny-terminate-for-developers), or the controller refused
	// a Retry that rewrites its workflow without the admission policy that checks its creator.
	PermissionDenied Code = 8
	// Unauthenticated: the API server did not accept the requester's credentials.
	Unauthenticated Code = 9
)

func (c Code) String() string {
	switch c {
	case OK:
		return "OK"
	case InvalidArgument:
		return "InvalidArgument"
	case FailedPrecondition:
		return "FailedPrecondition"
	case NotFound:
		return "NotFound"
	case DeadlineExceeded:
		return "DeadlineExceeded"
	case PermissionDenied:
		return "PermissionDenied"
	case Unauthenticated:
		return "Unauthenticated"
	}
	return "Unavailable"
}

// CodeOf maps an outcome reason to its code.
func CodeOf(reason string) Code {
	switch reason {
	case ReasonApplied:
		return OK
	// The request names nothing it can act on (a selector matching no suspend node, nothing suspended):
	// the design's InvalidArgument, like argo's "no suspend nodes matching".
	case ReasonInvalidNodeFieldSelector, ReasonUnknownAction, ReasonMissingOutputParameter, ReasonInvalidOutputParameters,
		ReasonOutcomeNotStorable, ReasonInvalidParameter, ReasonNothingToResume, ReasonNothingToStop:
		return InvalidArgument
	case ReasonWorkflowNotFound:
		return NotFound
	case ReasonRetryOverridesNotAuthorized:
		return PermissionDenied
	case ReasonWorkflowCompleted, ReasonWorkflowNotCompleted, ReasonNothingToRetry, ReasonInvalidNodeTree:
		return FailedPrecondition
	}
	return FailedPrecondition
}

// Error is a failed or unfinished action, with its code.
type Error struct {
	Code    Code
	Action  string
	Reason  string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: action %s: %s: %s", e.Code, e.Action, e.Reason, e.Message)
}

// Request creates an action (generateName "<workflow>-<action>-") and waits for its terminal phase: the
// sync contract. It returns the terminal action, or an *Error carrying the outcome's code; a timeout is
// DeadlineExceeded naming the action, which stays and will still be applied.
func Request(ctx context.Context, client *v1alpha1.NamespacedClient, spec v1alpha1.WorkflowActionSpec, labels map[string]string, timeout time.Duration) (*v1alpha1.WorkflowAction, error) {
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[common.LabelKeyWorkflow] = spec.WorkflowRef.Name // find a workflow's actions with a selector
	a, err := client.Create(ctx, &v1alpha1.WorkflowAction{
		ObjectMeta: metav1.ObjectMeta{GenerateName: spec.WorkflowRef.Name + "-" + strings.ToLower(spec.Action) + "-", Labels: labels},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, &Error{Code: createRefusedCode(err), Action: spec.Action, Reason: ReasonRejected, Message: err.Error()}
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done, err := waitTerminal(waitCtx, client, a)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		seen := "no controller has reported on it yet"
		if cur, gerr := client.Get(ctx, a.Name, metav1.GetOptions{}); gerr == nil && cur.Status.Phase == v1alpha1.PhasePending {
			a, seen = cur, fmt.Sprintf("the controller has seen it: Pending, %s: %s", cur.Status.Reason, cur.Status.Message)
		}
		return a, &Error{Code: DeadlineExceeded, Action: a.Name, Reason: "Timeout",
			Message: fmt.Sprintf("no outcome within %s (%s); the action stays and will still be applied", timeout, seen)}
	}
	if err != nil {
		return a, &Error{Code: Unavailable, Action: a.Name, Reason: "WatchFailed", Message: err.Error()}
	}
	if done.Status.Phase != v1alpha1.PhaseSucceeded {
		return done, &Error{Code: CodeOf(done.Status.Reason), Action: done.Name, Reason: done.Status.Reason, Message: done.Status.Message}
	}
	return done, nil
}

// ReasonRejected is the reason of a create the API server refused: the action never existed.
const ReasonRejected = "Rejected"

// createRefusedCode maps a refused create the way argo-server maps Kubernetes errors to gRPC codes.
func createRefusedCode(err error) Code {
	switch {
	case apierrors.IsForbidden(err):
		return PermissionDenied
	case apierrors.IsUnauthorized(err):
		return Unauthenticated
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return InvalidArgument // the schema or a CEL rule refused the spec
	}
	return Unavailable
}

// waitTerminal gets, then watches from the resourceVersion it read, so no update can be missed.
func waitTerminal(ctx context.Context, client *v1alpha1.NamespacedClient, a *v1alpha1.WorkflowAction) (*v1alpha1.WorkflowAction, error) {
	for {
		cur, err := client.Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if cur.Status.Terminal() {
			return cur, nil
		}
		// Watch from what was just read: every later change is delivered.
		w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", a.Name).String(), ResourceVersion: cur.ResourceVersion})
		if err != nil {
			return nil, err
		}
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*v1alpha1.WorkflowAction); ok && ev.Type != watch.Error {
				if got.Status.Terminal() {
					w.Stop()
					return got, nil
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The watch ended (timeout, or the resourceVersion expired): get again and resume.
	}
}

// CreatorLabels asks the API server who the caller is (a SelfSubjectReview) and returns argo's creator
// label for that user, to put on an action so the workflow's actor label names the requester. It is a
// breadcrumb, not proof: anyone who may create actions may write any label, and the audit log is the
// record to trust.
func CreatorLabels(ctx context.Context, reviews authv1client.SelfSubjectReviewsGetter) (map[string]string, error) {
	review, err := reviews.SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("asking the API server who the requester is: %w", err)
	}
	user := labelValue(review.Status.UserInfo.Username)
	if user == "" {
		return nil, nil
	}
	return map[string]string{common.LabelKeyCreator: user}, nil
}

// labelValue turns a user name into a label value the way argo's creator labels do: characters a label
// value cannot hold become '-', and the value is cut to 63 characters and trimmed to start and end
// alphanumeric.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	if len(b) > validation.LabelValueMaxLength {
		b = b[:validation.LabelValueMaxLength]
	}
	return strings.TrimFunc(string(b), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

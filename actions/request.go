package actions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

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
	}
	return "Unavailable"
}

// CodeOf maps an outcome reason to its code.
func CodeOf(reason string) Code {
	switch reason {
	case ReasonApplied:
		return OK
	case ReasonInvalidNodeFieldSelector, ReasonUnknownAction, ReasonMissingOutputParameter, ReasonInvalidOutputParameters,
		ReasonOutcomeNotStorable, ReasonInvalidParameter:
		return InvalidArgument
	case ReasonWorkflowNotFound:
		return NotFound
	case ReasonWorkflowCompleted, ReasonNothingToResume, ReasonNothingToSuspend, ReasonNothingToStop,
		ReasonWorkflowNotCompleted, ReasonNothingToRetry, ReasonInvalidNodeTree:
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
		code := Unavailable
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
			code = InvalidArgument // refused at admission: the request itself is wrong
		}
		return nil, &Error{Code: code, Action: spec.Action, Reason: "Rejected", Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done, err := waitTerminal(ctx, client, a)
	if errors.Is(err, context.DeadlineExceeded) {
		return a, &Error{Code: DeadlineExceeded, Action: a.Name, Reason: "Timeout",
			Message: fmt.Sprintf("no outcome within %s; the action stays and will still be applied", timeout)}
	}
	if err != nil {
		return a, &Error{Code: Unavailable, Action: a.Name, Reason: "WatchFailed", Message: err.Error()}
	}
	if done.Status.Phase != v1alpha1.PhaseSucceeded {
		return done, &Error{Code: CodeOf(done.Status.Reason), Action: done.Name, Reason: done.Status.Reason, Message: done.Status.Message}
	}
	return done, nil
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

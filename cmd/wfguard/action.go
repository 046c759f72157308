package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
)

const actionUsage = `Usage: wfguard action {suspend|resume|stop|terminate|retry} WORKFLOW [flags]

Creates a WorkflowAction labelled with the requester (argo's creator label, from a SelfSubjectReview) and
waits for its outcome. retry runs a Failed or Errored workflow's failed nodes
again (with --restart-successful --node-field-selector S also the succeeded nodes S selects; -p NAME=VALUE
overrides an argument parameter; these two need update on the workflow); the controller deletes the previous
run's pods itself. Exit codes: 0 applied, 2 usage, 3 InvalidArgument,
4 FailedPrecondition (e.g. workflow completed), 5 NotFound, 6 DeadlineExceeded (the action stays and will
still be applied), 7 Unavailable, 8 PermissionDenied (the create was refused: RBAC or an admission policy;
or RetryOverridesNotAuthorized), 9 Unauthenticated.
`

// repeated collects a repeatable flag's values in order.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }
func (r *repeated) Set(s string) error {
	if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	*r = append(*r, s)
	return nil
}

type keyValues map[string]string

func (kv keyValues) String() string { return fmt.Sprint(map[string]string(kv)) }
func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	kv[k] = v
	return nil
}

func runAction(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, actionUsage)
		return 2
	}
	kinds := map[string]string{"suspend": v1alpha1.ActionSuspend, "resume": v1alpha1.ActionResume,
		"stop": v1alpha1.ActionStop, "terminate": v1alpha1.ActionTerminate, "retry": v1alpha1.ActionRetry}
	kind, ok := kinds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "wfguard action: unknown action %q\n\n%s", args[0], actionUsage)
		return 2
	}
	workflow := args[1]
	fs := flag.NewFlagSet("wfguard action", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := fs.String("n", "", "namespace of the workflow (default: the kubeconfig context's, else default)")
	selector := fs.String("node-field-selector", "", "resume or stop only suspend nodes matching this field selector (e.g. displayName=approve); with retry --restart-successful, the succeeded nodes to run again")
	restartSuccessful := fs.Bool("restart-successful", false, "retry: also run again the succeeded nodes --node-field-selector selects")
	var parameters repeated
	fs.Var(&parameters, "p", "retry: NAME=VALUE overriding an argument parameter (repeatable)")
	message := fs.String("message", "", "stop, terminate: why, for the workflow's final message (with stop --node-field-selector: the message of the failed suspend nodes)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the outcome")
	uid := fs.String("uid", "", "act only on the workflow with this UID (workflowRef.uid): a same-named replacement is never touched")
	outputs := keyValues{}
	fs.Var(outputs, "output-parameter", "NAME=VALUE output parameter for resumed nodes (repeatable)")
	if err := fs.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	spec := v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: workflow, UID: types.UID(*uid)}, Action: kind}
	switch {
	case kind == v1alpha1.ActionResume && (*selector != "" || len(outputs) > 0):
		spec.Resume = &v1alpha1.ResumeParameters{NodeFieldSelector: *selector, OutputParameters: outputs}
	case kind == v1alpha1.ActionStop && (*selector != "" || *message != ""):
		spec.Stop = &v1alpha1.StopParameters{NodeFieldSelector: *selector, Message: *message}
	case kind == v1alpha1.ActionTerminate && *message != "" && *selector == "" && len(outputs) == 0:
		spec.Terminate = &v1alpha1.TerminateParameters{Message: *message}
	case kind == v1alpha1.ActionRetry && *message == "" && len(outputs) == 0:
		if *selector != "" || *restartSuccessful || len(parameters) > 0 {
			spec.Retry = &v1alpha1.RetryParameters{RestartSuccessful: *restartSuccessful, NodeFieldSelector: *selector, Parameters: parameters}
		}
	case *selector != "" || *message != "" || len(outputs) > 0:
		fmt.Fprintf(stderr, "wfguard action: --node-field-selector, --message and --output-parameter do not apply to %s\n", args[0])
		return 2
	}
	if kind != v1alpha1.ActionRetry && (*restartSuccessful || len(parameters) > 0) {
		fmt.Fprintf(stderr, "wfguard action: --restart-successful and -p apply only to retry\n")
		return 2
	}
	if *namespace == "" {
		*namespace = contextNamespace(*kubeconfig)
	}
	config, err := restConfig(*kubeconfig, 20, 30)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard action: %v\n", err)
		return int(actions.Unavailable)
	}
	client, err := v1alpha1.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard action: %v\n", err)
		return int(actions.Unavailable)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var labels map[string]string
	if kube, err := kubernetes.NewForConfig(config); err == nil {
		// Best effort: without the requester's name the action still runs, with no actor label.
		if labels, err = actions.CreatorLabels(ctx, kube.AuthenticationV1()); err != nil {
			fmt.Fprintf(stderr, "wfguard action: warning: the action will not name its requester: %v\n", err)
		}
	}
	done, err := actions.Request(ctx, client.Namespace(*namespace), spec, labels, *timeout)
	var aerr *actions.Error
	if errors.As(err, &aerr) {
		fmt.Fprintf(stderr, "wfguard action: %v\n", aerr)
		return int(aerr.Code)
	}
	if err != nil {
		fmt.Fprintf(stderr, "wfguard action: %v\n", err)
		return int(actions.Unavailable)
	}
	fmt.Fprintf(stdout, "%s %s: %s (%s)\n", done.Spec.Action, done.Name, done.Status.Reason, done.Status.Message)
	if argo, err := versioned.NewForConfig(config); err == nil {
		if wf, err := argo.ArgoprojV1alpha1().Workflows(*namespace).Get(ctx, workflow, metav1.GetOptions{}); err == nil {
			fmt.Fprintf(stdout, "workflow %s/%s: phase %s %s\n", wf.Namespace, wf.Name, wf.Status.Phase, wf.Status.Message)
		}
	}
	return 0
}

// contextNamespace is the namespace of the kubeconfig's current context, like kubectl's default.
func contextNamespace(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

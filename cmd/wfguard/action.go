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
	"k8s.io/client-go/rest"
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
	c, code := parseActionCommand(args, stderr)
	if c == nil {
		return code
	}
	return c.request(stdout, stderr)
}

// actionVerb is what an action verb requests, and which parameter flags it takes.
type actionVerb struct {
	kind string
	// withParameters sets the spec's parameters from the flags, and reports whether the flags given are
	// ones this action takes; when not, any of --node-field-selector, --message, --output-parameter is refused.
	withParameters func(*v1alpha1.WorkflowActionSpec, *actionFlags) bool
}

// actionVerbs are the verbs of `wfguard action`, as typed.
var actionVerbs = map[string]actionVerb{
	"suspend":   {v1alpha1.ActionSuspend, noParameters},
	"resume":    {v1alpha1.ActionResume, resumeParameters},
	"stop":      {v1alpha1.ActionStop, stopParameters},
	"terminate": {v1alpha1.ActionTerminate, terminateParameters},
	"retry":     {v1alpha1.ActionRetry, retryParameters},
}

// actionFlags are the flags of `wfguard action VERB WORKFLOW`.
type actionFlags struct {
	kubeconfig        string
	namespace         string
	selector          string
	restartSuccessful bool
	parameters        repeated
	message           string
	timeout           time.Duration
	uid               string
	outputs           keyValues
}

// actionCommand is a checked `wfguard action` command line: the WorkflowAction to request, and where.
type actionCommand struct {
	workflow   string
	kubeconfig string
	namespace  string // "" is the kubeconfig context's
	timeout    time.Duration
	spec       v1alpha1.WorkflowActionSpec
}

// parseActionCommand checks the command line; nil means exit with the code, after the usage or the reason
// was printed (or none for -h).
func parseActionCommand(args []string, stderr io.Writer) (*actionCommand, int) {
	if len(args) < 2 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, actionUsage)
		return nil, 2
	}
	verb, ok := actionVerbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "wfguard action: unknown action %q\n\n%s", args[0], actionUsage)
		return nil, 2
	}
	workflow := args[1]
	f, err := parseActionFlags(args[2:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil, 0
	}
	if err != nil {
		return nil, 2 // the flag set printed why
	}
	spec, err := verb.spec(args[0], workflow, f)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard action: %v\n", err)
		return nil, 2
	}
	return &actionCommand{workflow: workflow, kubeconfig: f.kubeconfig, namespace: f.namespace, timeout: f.timeout, spec: spec}, 0
}

// parseActionFlags parses the flags after VERB WORKFLOW; flags after a further argument are not parsed.
func parseActionFlags(args []string, stderr io.Writer) (*actionFlags, error) {
	f := &actionFlags{outputs: keyValues{}}
	fs := flag.NewFlagSet("wfguard action", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	fs.StringVar(&f.namespace, "n", "", "namespace of the workflow (default: the kubeconfig context's, else default)")
	fs.StringVar(&f.selector, "node-field-selector", "", "resume or stop only suspend nodes matching this field selector (e.g. displayName=approve); with retry --restart-successful, the succeeded nodes to run again")
	fs.BoolVar(&f.restartSuccessful, "restart-successful", false, "retry: also run again the succeeded nodes --node-field-selector selects")
	fs.Var(&f.parameters, "p", "retry: NAME=VALUE overriding an argument parameter (repeatable)")
	fs.StringVar(&f.message, "message", "", "stop, terminate: why, for the workflow's final message (with stop --node-field-selector: the message of the failed suspend nodes)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the outcome")
	fs.StringVar(&f.uid, "uid", "", "act only on the workflow with this UID (workflowRef.uid): a same-named replacement is never touched")
	fs.Var(f.outputs, "output-parameter", "NAME=VALUE output parameter for resumed nodes (repeatable)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return f, nil
}

// spec is the WorkflowAction spec the flags ask of this verb, or why they do not fit it.
func (v actionVerb) spec(verb, workflow string, f *actionFlags) (v1alpha1.WorkflowActionSpec, error) {
	spec := v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{Name: workflow, UID: types.UID(f.uid)}, Action: v.kind}
	if !v.withParameters(&spec, f) && (f.selector != "" || f.message != "" || len(f.outputs) > 0) {
		return spec, fmt.Errorf("--node-field-selector, --message and --output-parameter do not apply to %s", verb)
	}
	if v.kind != v1alpha1.ActionRetry && (f.restartSuccessful || len(f.parameters) > 0) {
		return spec, errors.New("--restart-successful and -p apply only to retry")
	}
	return spec, nil
}

func noParameters(*v1alpha1.WorkflowActionSpec, *actionFlags) bool { return false }

// resumeParameters: a message given beside a selector or outputs is ignored.
func resumeParameters(spec *v1alpha1.WorkflowActionSpec, f *actionFlags) bool {
	if f.selector != "" || len(f.outputs) > 0 {
		spec.Resume = &v1alpha1.ResumeParameters{NodeFieldSelector: f.selector, OutputParameters: f.outputs}
		return true
	}
	return false
}

// stopParameters: outputs given beside a selector or message are ignored.
func stopParameters(spec *v1alpha1.WorkflowActionSpec, f *actionFlags) bool {
	if f.selector != "" || f.message != "" {
		spec.Stop = &v1alpha1.StopParameters{NodeFieldSelector: f.selector, Message: f.message}
		return true
	}
	return false
}

func terminateParameters(spec *v1alpha1.WorkflowActionSpec, f *actionFlags) bool {
	if f.message != "" && f.selector == "" && len(f.outputs) == 0 {
		spec.Terminate = &v1alpha1.TerminateParameters{Message: f.message}
		return true
	}
	return false
}

func retryParameters(spec *v1alpha1.WorkflowActionSpec, f *actionFlags) bool {
	if f.message != "" || len(f.outputs) > 0 {
		return false
	}
	if f.selector != "" || f.restartSuccessful || len(f.parameters) > 0 {
		spec.Retry = &v1alpha1.RetryParameters{RestartSuccessful: f.restartSuccessful, NodeFieldSelector: f.selector, Parameters: f.parameters}
	}
	return true
}

// request creates the WorkflowAction, waits for its outcome and prints it; the result is the exit code.
func (c *actionCommand) request(stdout, stderr io.Writer) int {
	if c.namespace == "" {
		c.namespace = contextNamespace(c.kubeconfig)
	}
	config, err := restConfig(c.kubeconfig, 20, 30)
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
	labels := requesterLabels(ctx, config, stderr)
	done, err := actions.Request(ctx, client.Namespace(c.namespace), c.spec, labels, c.timeout)
	if err != nil {
		return printFailure(err, stderr)
	}
	c.printOutcome(ctx, config, done, stdout)
	return 0
}

// requesterLabels are the creator labels naming who asks. Best effort: without the requester's name the
// action still runs, with no actor label.
func requesterLabels(ctx context.Context, config *rest.Config, stderr io.Writer) map[string]string {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil
	}
	labels, err := actions.CreatorLabels(ctx, kube.AuthenticationV1())
	if err != nil {
		fmt.Fprintf(stderr, "wfguard action: warning: the action will not name its requester: %v\n", err)
	}
	return labels
}

// printFailure prints why the request failed and returns its exit code: an actions.Error's own, else
// Unavailable.
func printFailure(err error, stderr io.Writer) int {
	var aerr *actions.Error
	if errors.As(err, &aerr) {
		fmt.Fprintf(stderr, "wfguard action: %v\n", aerr)
		return int(aerr.Code)
	}
	fmt.Fprintf(stderr, "wfguard action: %v\n", err)
	return int(actions.Unavailable)
}

// printOutcome prints the action's outcome, then the workflow's phase when it can be read: the action
// was applied either way.
func (c *actionCommand) printOutcome(ctx context.Context, config *rest.Config, done *v1alpha1.WorkflowAction, stdout io.Writer) {
	fmt.Fprintf(stdout, "%s %s: %s (%s)\n", done.Spec.Action, done.Name, done.Status.Reason, done.Status.Message)
	argo, err := versioned.NewForConfig(config)
	if err != nil {
		return
	}
	wf, err := argo.ArgoprojV1alpha1().Workflows(c.namespace).Get(ctx, c.workflow, metav1.GetOptions{})
	if err != nil {
		return
	}
	fmt.Fprintf(stdout, "workflow %s/%s: phase %s %s\n", wf.Namespace, wf.Name, wf.Status.Phase, wf.Status.Message)
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

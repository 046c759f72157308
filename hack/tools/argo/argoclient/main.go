// Command argo-client performs the workflow operations of argo's CLI and server (suspend, resume, stop,
// terminate, retry, resubmit, and a plain relabel) with argo's own client code (workflow/util and the typed
// clientset), so tests can check how wfguard copes with another writer that rewrites whole Workflows through
// argo's types, or copies them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/argoproj/argo-workflows/v3/persist/sqldb"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/hydrator"
	"github.com/argoproj/argo-workflows/v3/workflow/util"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const usage = `usage: argo-client --kubeconfig FILE -n NAMESPACE [--as USER] OPERATION WORKFLOW

operations (argo v3.7's own client code):
  suspend     workflow/util.SuspendWorkflow (sets spec.suspend with a whole-object Update)
  resume      workflow/util.ResumeWorkflow (--node-field-selector to resume suspend nodes)
  stop        workflow/util.StopWorkflow (--node-field-selector, --message)
  terminate   workflow/util.TerminateWorkflow
  retry       as argo's server RetryWorkflow (the CLI's argo retry and the UI's Retry button):
              workflow/util.FormulateRetryWorkflow (--restart-successful, --node-field-selector, -p NAME=VALUE),
              then deletes the pods it names and Updates the workflow; prints the updated workflow's
              metadata.generation
  resubmit    workflow/util.FormulateResubmitWorkflow (--memoized, -p NAME=VALUE), then Create; prints the
              new workflow's name
  label       Get and Update the whole Workflow through argo's typed client with label KEY=VALUE (--label)
`

// options are the command line's operation arguments.
type options struct {
	namespace, op, name string
	selector, message   string
	label               string
	restartSuccessful   bool
	memoized            bool
	parameters          []string
}

// parameterFlags collects every -p NAME=VALUE, as argo's CLI does.
type parameterFlags []string

func (p *parameterFlags) String() string     { return strings.Join(*p, ",") }
func (p *parameterFlags) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	fs := flag.NewFlagSet("argo-client", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	var o options
	var params parameterFlags
	fs.StringVar(&o.namespace, "n", "", "namespace")
	fs.StringVar(&o.selector, "node-field-selector", "", "node field selector (resume, stop, retry)")
	fs.StringVar(&o.message, "message", "", "message (stop)")
	fs.StringVar(&o.label, "label", "argo-client=touched", "KEY=VALUE (label)")
	fs.BoolVar(&o.restartSuccessful, "restart-successful", false, "restart the successful nodes the node field selector matches (retry)")
	fs.BoolVar(&o.memoized, "memoized", false, "reuse the succeeded nodes (resubmit)")
	fs.Var(&params, "p", "input parameter NAME=VALUE (retry, resubmit; repeatable)")
	as := fs.String("as", "", "user to impersonate, as kubectl --as")
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 2 || o.namespace == "" {
		fs.Usage()
		os.Exit(2)
	}
	o.op, o.name, o.parameters = fs.Arg(0), fs.Arg(1), params // nil without -p, as argo's CLI passes it
	if err := run(*kubeconfig, *as, o); err != nil {
		fmt.Fprintf(os.Stderr, "argo-client: %s %s: %v\n", o.op, o.name, err)
		os.Exit(1)
	}
}

func run(kubeconfig, as string, o options) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	config.Impersonate.UserName = as
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wfs := client.ArgoprojV1alpha1().Workflows(o.namespace)
	h := hydrator.New(sqldb.ExplosiveOffloadNodeStatusRepo)
	switch o.op {
	case "suspend":
		return util.SuspendWorkflow(ctx, wfs, o.name)
	case "resume":
		return util.ResumeWorkflow(ctx, wfs, h, o.name, o.selector)
	case "stop":
		return util.StopWorkflow(ctx, wfs, h, o.name, o.selector, o.message)
	case "terminate":
		return util.TerminateWorkflow(ctx, wfs, o.name)
	case "retry":
		return retry(ctx, config, client, h, o)
	case "resubmit":
		return resubmit(ctx, client, o)
	case "label":
		return relabel(ctx, client, o)
	}
	return fmt.Errorf("unknown operation %q", o.op)
}

// retry is what argo's server does for RetryWorkflow (server/workflow/workflow_server.go, argo v3.7): Get,
// hydrate, formulate, delete the pods formulate names (NotFound is fine), dehydrate, Update.
func retry(ctx context.Context, config *rest.Config, client versioned.Interface, h hydrator.Interface, o options) error {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	wfs := client.ArgoprojV1alpha1().Workflows(o.namespace)
	wf, err := wfs.Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := h.Hydrate(wf); err != nil {
		return err
	}
	retried, podsToDelete, err := util.FormulateRetryWorkflow(ctx, wf, o.restartSuccessful, o.selector, o.parameters)
	if err != nil {
		return err
	}
	for _, pod := range podsToDelete {
		if err := kube.CoreV1().Pods(o.namespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", pod, err)
		}
	}
	if err := h.Dehydrate(retried); err != nil {
		return err
	}
	updated, err := wfs.Update(ctx, retried, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	fmt.Println(updated.Generation)
	return nil
}

// resubmit is what argo's CLI and server do for a resubmit: formulate, then Create; it prints the new name.
func resubmit(ctx context.Context, client versioned.Interface, o options) error {
	wfs := client.ArgoprojV1alpha1().Workflows(o.namespace)
	wf, err := wfs.Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	resubmitted, err := util.FormulateResubmitWorkflow(ctx, wf, o.memoized, o.parameters)
	if err != nil {
		return err
	}
	created, err := wfs.Create(ctx, resubmitted, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Println(created.Name)
	return nil
}

// relabel is a Get and a whole-object Update through argo's typed client, setting one label.
func relabel(ctx context.Context, client versioned.Interface, o options) error {
	wfs := client.ArgoprojV1alpha1().Workflows(o.namespace)
	wf, err := wfs.Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	k, v, ok := strings.Cut(o.label, "=")
	if !ok {
		return fmt.Errorf("--label %q is not KEY=VALUE", o.label)
	}
	if wf.Labels == nil {
		wf.Labels = map[string]string{}
	}
	wf.Labels[k] = v
	_, err = wfs.Update(ctx, wf, metav1.UpdateOptions{})
	return err
}

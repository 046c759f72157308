// Command argo-client performs the workflow operations of argo's CLI and server (suspend, resume, stop,
// terminate, resubmit, and a plain relabel) with argo's own client code (workflow/util and the typed
// clientset), so tests can check how wfguard copes with another writer that rewrites whole Workflows through
// argo's types, or copies them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/argoproj/argo-workflows/v3/persist/sqldb"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/hydrator"
	"github.com/argoproj/argo-workflows/v3/workflow/util"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

const usage = `usage: argo-client --kubeconfig FILE -n NAMESPACE [--as USER] OPERATION WORKFLOW

operations (argo v3.7's own client code):
  suspend     workflow/util.SuspendWorkflow (sets spec.suspend with a whole-object Update)
  resume      workflow/util.ResumeWorkflow (--node-field-selector to resume suspend nodes)
  stop        workflow/util.StopWorkflow (--node-field-selector, --message)
  terminate   workflow/util.TerminateWorkflow
  resubmit    workflow/util.FormulateResubmitWorkflow, then Create; prints the new workflow's name
  label       Get and Update the whole Workflow through argo's typed client with label KEY=VALUE (--label)
`

func main() {
	fs := flag.NewFlagSet("argo-client", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	namespace := fs.String("n", "", "namespace")
	selector := fs.String("node-field-selector", "", "node field selector (resume, stop)")
	message := fs.String("message", "", "message (stop)")
	label := fs.String("label", "argo-client=touched", "KEY=VALUE (label)")
	as := fs.String("as", "", "user to impersonate, as kubectl --as")
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 2 || *namespace == "" {
		fs.Usage()
		os.Exit(2)
	}
	if err := run(*kubeconfig, *as, *namespace, fs.Arg(0), fs.Arg(1), *selector, *message, *label); err != nil {
		fmt.Fprintf(os.Stderr, "argo-client: %s %s: %v\n", fs.Arg(0), fs.Arg(1), err)
		os.Exit(1)
	}
}

func run(kubeconfig, as, namespace, op, name, selector, message, label string) error {
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
	wfs := client.ArgoprojV1alpha1().Workflows(namespace)
	h := hydrator.New(sqldb.ExplosiveOffloadNodeStatusRepo)
	switch op {
	case "suspend":
		return util.SuspendWorkflow(ctx, wfs, name)
	case "resume":
		return util.ResumeWorkflow(ctx, wfs, h, name, selector)
	case "stop":
		return util.StopWorkflow(ctx, wfs, h, name, selector, message)
	case "terminate":
		return util.TerminateWorkflow(ctx, wfs, name)
	case "resubmit":
		wf, err := wfs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		resubmitted, err := util.FormulateResubmitWorkflow(ctx, wf, false, nil)
		if err != nil {
			return err
		}
		created, err := wfs.Create(ctx, resubmitted, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		fmt.Println(created.Name)
		return nil
	case "label":
		wf, err := wfs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		k, v, ok := cut(label)
		if !ok {
			return fmt.Errorf("--label %q is not KEY=VALUE", label)
		}
		if wf.Labels == nil {
			wf.Labels = map[string]string{}
		}
		wf.Labels[k] = v
		_, err = wfs.Update(ctx, wf, metav1.UpdateOptions{})
		return err
	}
	return fmt.Errorf("unknown operation %q", op)
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

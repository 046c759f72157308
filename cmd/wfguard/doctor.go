package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wfguard/wfguard/doctor"
	"github.com/wfguard/wfguard/taskresult"
)

const doctorUsage = `Usage: wfguard doctor [-n NS | -A] [--fix [--yes]] [-o json] [flags]

Audits workflows, their pods, task results and WorkflowActions, the executor's RBAC and the Workflow CRD,
and prints each problem with its age. Read-only unless --fix --yes. --fix alone prints the safe repairs it
would make; --fix --yes makes them (release the status finalizer of pods whose workflow is gone; finalize
the task result of a node whose pod is gone), each re-verified first and recorded with an Event.
Exit codes: 0 no problems, 1 problems found (after --fix --yes: problems left unrepaired), 2 usage,
3 no problems found but some checks could not run (see "skipped").
`

func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wfguard doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, doctorUsage); fs.PrintDefaults() }
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := fs.String("n", "", "namespace to audit (default: the kubeconfig context's, else default)")
	all := fs.Bool("A", false, "audit all namespaces")
	output := fs.String("o", "", "output format: empty for text, or json")
	fix := fs.Bool("fix", false, "plan the safe repairs (a dry run unless --yes)")
	yes := fs.Bool("yes", false, "with --fix: apply the repairs")
	minAge := fs.Duration("min-age", doctor.DefaultMinAge, "how old a transient state must be to count (result not finalized after its pod ended, finalizer still held)")
	actionAfter := fs.Duration("action-pending-after", doctor.DefaultActionPendingAfter, "flag WorkflowActions still Pending after this long")
	unreconciledAfter := fs.Duration("unreconciled-after", doctor.DefaultUnreconciledAfter, "flag workflows whose controller has not reacted for this long")
	resultTimeout := fs.Duration("task-result-timeout", taskresult.DefaultTimeout, "the controller's --task-result-timeout")
	requestTimeout := fs.Duration("request-timeout", 30*time.Second, "timeout of each API request")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "wfguard doctor: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *all && *namespace != "":
		fmt.Fprintln(stderr, "wfguard doctor: -n and -A exclude each other")
		return 2
	case *yes && !*fix:
		fmt.Fprintln(stderr, "wfguard doctor: --yes only applies with --fix")
		return 2
	case *output != "" && *output != "json":
		fmt.Fprintf(stderr, "wfguard doctor: -o must be json or empty, got %q\n", *output)
		return 2
	}
	if !*all && *namespace == "" {
		*namespace = contextNamespace(*kubeconfig)
	}
	clients, err := diagnosticClients(*kubeconfig, *requestTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard doctor: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	now := time.Now()
	report := doctor.Audit(ctx, clients, doctor.Options{Namespace: *namespace, Now: now, MinAge: *minAge,
		ActionPendingAfter: *actionAfter, UnreconciledAfter: *unreconciledAfter, TaskResultTimeout: *resultTimeout})
	result := doctor.Result{Report: report}
	if *fix {
		result.DryRun = !*yes
		result.Fix = doctor.Fix(ctx, clients, report, *yes, now)
	}
	if *output == "json" {
		err = doctor.WriteJSON(stdout, result)
	} else {
		err = doctor.WriteHuman(stdout, result)
	}
	if err != nil {
		fmt.Fprintf(stderr, "wfguard doctor: writing the output: %v\n", err)
		return 1
	}
	return doctor.ExitCode(result)
}

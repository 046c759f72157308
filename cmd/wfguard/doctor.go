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
	"github.com/wfguard/wfguard/inspect"
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
	f, err := parseDoctorFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2 // the flag set printed why
	}
	if err := f.check(); err != nil {
		fmt.Fprintf(stderr, "wfguard doctor: %v\n", err)
		return 2
	}
	if !f.all && f.namespace == "" {
		f.namespace = contextNamespace(f.kubeconfig)
	}
	clients, err := diagnosticClients(f.kubeconfig, f.requestTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "wfguard doctor: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	result := f.audit(ctx, clients, time.Now())
	if err := f.write(stdout, result); err != nil {
		fmt.Fprintf(stderr, "wfguard doctor: writing the output: %v\n", err)
		return 1
	}
	return doctor.ExitCode(result)
}

// doctorFlags are the flags of `wfguard doctor`.
type doctorFlags struct {
	kubeconfig        string
	namespace         string
	all               bool
	output            string
	fix               bool
	yes               bool
	minAge            time.Duration
	actionAfter       time.Duration
	unreconciledAfter time.Duration
	resultTimeout     time.Duration
	requestTimeout    time.Duration
	args              []string // after the flags
}

func parseDoctorFlags(args []string, stderr io.Writer) (*doctorFlags, error) {
	f := &doctorFlags{}
	fs := flag.NewFlagSet("wfguard doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, doctorUsage); fs.PrintDefaults() }
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	fs.StringVar(&f.namespace, "n", "", "namespace to audit (default: the kubeconfig context's, else default)")
	fs.BoolVar(&f.all, "A", false, "audit all namespaces")
	fs.StringVar(&f.output, "o", "", "output format: empty for text, or json")
	fs.BoolVar(&f.fix, "fix", false, "plan the safe repairs (a dry run unless --yes)")
	fs.BoolVar(&f.yes, "yes", false, "with --fix: apply the repairs")
	fs.DurationVar(&f.minAge, "min-age", doctor.DefaultMinAge, "how old a transient state must be to count (result not finalized after its pod ended, finalizer still held)")
	fs.DurationVar(&f.actionAfter, "action-pending-after", doctor.DefaultActionPendingAfter, "flag WorkflowActions still Pending after this long")
	fs.DurationVar(&f.unreconciledAfter, "unreconciled-after", doctor.DefaultUnreconciledAfter, "flag workflows whose controller has not reacted for this long")
	fs.DurationVar(&f.resultTimeout, "task-result-timeout", taskresult.DefaultTimeout, "the controller's --task-result-timeout")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 30*time.Second, "timeout of each API request")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.args = fs.Args()
	return f, nil
}

// check refuses the flag combinations that do not say what to audit or how.
func (f *doctorFlags) check() error {
	switch {
	case len(f.args) > 0:
		return fmt.Errorf("unexpected argument %q", f.args[0])
	case f.all && f.namespace != "":
		return errors.New("-n and -A exclude each other")
	case f.yes && !f.fix:
		return errors.New("--yes only applies with --fix")
	case f.output != "" && f.output != "json":
		return fmt.Errorf("-o must be json or empty, got %q", f.output)
	}
	return nil
}

// audit finds the problems and, with --fix, plans the repairs (makes them with --yes).
func (f *doctorFlags) audit(ctx context.Context, clients *inspect.Clients, now time.Time) doctor.Result {
	report := doctor.Audit(ctx, clients, doctor.Options{Namespace: f.namespace, Now: now, MinAge: f.minAge,
		ActionPendingAfter: f.actionAfter, UnreconciledAfter: f.unreconciledAfter, TaskResultTimeout: f.resultTimeout})
	result := doctor.Result{Report: report}
	if f.fix {
		result.DryRun = !f.yes
		result.Fix = doctor.Fix(ctx, clients, report, f.yes, now)
	}
	return result
}

// write prints the result as -o says.
func (f *doctorFlags) write(stdout io.Writer, result doctor.Result) error {
	if f.output == "json" {
		return doctor.WriteJSON(stdout, result)
	}
	return doctor.WriteHuman(stdout, result)
}

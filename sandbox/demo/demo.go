package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/sandbox"
	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// AnnotationExpectedPhase on an example names the phase the demo expects it to end in (default Succeeded).
const AnnotationExpectedPhase = "wfguard.io/expected-phase"

// Options configure a demo run.
type Options struct {
	ExamplesDir  string
	ControlPlane controlplane.Options
	Timeout      time.Duration
	Out          io.Writer
	Logger       *slog.Logger
}

// Run starts a sandbox, submits every example, shows progress, prints a report and returns whether
// every workflow ended in its expected phase with the invariants holding.
func Run(ctx context.Context, opts Options) (bool, error) {
	examples, err := loadExamples(opts.ExamplesDir)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(opts.Out, "wfguard-sandbox demo: starting an embedded control plane (etcd + kube-apiserver), the controller and the simulated node\n")
	sb, err := sandbox.Start(ctx, sandbox.Options{ControlPlane: opts.ControlPlane, Namespace: "demo", Logger: opts.Logger})
	if err != nil {
		return false, err
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			fmt.Fprintf(opts.Out, "warning: stopping the sandbox: %v\n", err)
		}
	}()
	argo := versioned.NewForConfigOrDie(sb.Config())
	// The controller deletes a completed workflow's results, as argo does: I1 is checked on what was written.
	stopRecording, err := recordCompleteResults(ctx, argo)
	if err != nil {
		return false, err
	}
	defer stopRecording() // a second stop is a no-op
	start := time.Now()
	for _, ex := range examples {
		if _, err := argo.ArgoprojV1alpha1().Workflows("demo").Create(ctx, ex.wf, metav1.CreateOptions{}); err != nil {
			return false, fmt.Errorf("submitting %s: %w", ex.file, err)
		}
		fmt.Fprintf(opts.Out, "submitted %-28s (%s, expect %s)\n", ex.wf.Name, ex.file, ex.expect)
	}
	final, err := watchUntilDone(ctx, argo, examples, opts)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(opts.Out, "\nall workflows finished in %s\n\n", time.Since(start).Round(time.Millisecond))
	ok := report(opts.Out, examples, final)
	verdict, vok := checkInvariants(stopRecording(), final)
	fmt.Fprintln(opts.Out, verdict)
	return ok && vok, nil
}

type example struct {
	file   string
	wf     *wfv1.Workflow
	expect wfv1.WorkflowPhase
}

func loadExamples(dir string) ([]example, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no examples (*.yaml) in %s", dir)
	}
	sort.Strings(files)
	var out []example
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading example: %w", err)
		}
		wf := &wfv1.Workflow{}
		if err := yaml.UnmarshalStrict(data, wf); err != nil {
			return nil, fmt.Errorf("example %s is not a Workflow: %w", f, err)
		}
		expect := wfv1.WorkflowPhase(wf.Annotations[AnnotationExpectedPhase])
		if expect == "" {
			expect = wfv1.WorkflowSucceeded
		}
		out = append(out, example{file: filepath.Base(f), wf: wf, expect: expect})
	}
	return out, nil
}

// watchUntilDone prints each node and workflow transition until every workflow completes.
func watchUntilDone(ctx context.Context, argo versioned.Interface, examples []example, opts Options) (map[string]*wfv1.Workflow, error) {
	seen := map[string]string{}
	final := map[string]*wfv1.Workflow{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		list, err := argo.ArgoprojV1alpha1().Workflows("demo").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			wf := &list.Items[i]
			if err := extstatus.InflateNodes(wf); err != nil {
				return false, err
			}
			final[wf.Name] = wf
			for _, n := range wf.Status.Nodes {
				state := string(n.Phase) + " " + n.Message
				if seen[n.ID] != state {
					seen[n.ID] = state
					fmt.Fprintf(opts.Out, "  %-28s %-9s %-40s %s\n", wf.Name, n.Phase, n.Name, n.Message)
				}
			}
		}
		for _, ex := range examples {
			if wf := final[ex.wf.Name]; wf == nil || !wf.Status.Phase.Completed() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var pending []string
		for _, ex := range examples {
			if wf := final[ex.wf.Name]; wf == nil || !wf.Status.Phase.Completed() {
				pending = append(pending, ex.wf.Name)
			}
		}
		return final, fmt.Errorf("workflows %v did not finish within %s", pending, opts.Timeout)
	}
	return final, nil
}

func report(out io.Writer, examples []example, final map[string]*wfv1.Workflow) bool {
	ok := true
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKFLOW\tPHASE\tEXPECTED\tDURATION\tNODES\tOUTPUTS\tMESSAGE")
	for _, ex := range examples {
		wf := final[ex.wf.Name]
		mark := ""
		if wf.Status.Phase != ex.expect {
			mark = " (UNEXPECTED)"
			ok = false
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%d\t%s\t%s\n", wf.Name, wf.Status.Phase, mark, ex.expect,
			wf.Status.FinishedAt.Sub(wf.Status.StartedAt.Time), len(wf.Status.Nodes), outputsOf(wf), wf.Status.Message)
	}
	tw.Flush()
	return ok
}

// outputsOf lists the pod nodes' outputs as step=value, shortest first.
func outputsOf(wf *wfv1.Workflow) string {
	var parts []string
	for _, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypePod || n.Outputs == nil {
			continue
		}
		if n.Outputs.Result != nil {
			parts = append(parts, fmt.Sprintf("%s.result=%s", n.DisplayName, *n.Outputs.Result))
		}
		for _, p := range n.Outputs.Parameters {
			if p.Value != nil {
				parts = append(parts, fmt.Sprintf("%s.%s=%s", n.DisplayName, p.Name, p.Value))
			}
		}
	}
	sort.Strings(parts)
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("+%d more", len(parts)-3))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// recordCompleteResults watches the demo's task results from now on and records, by name, each one seen
// finalized (report-outputs-completed=true). stop ends the watch and returns what it recorded.
func recordCompleteResults(ctx context.Context, argo versioned.Interface) (stop func() map[string]bool, err error) {
	w, err := argo.ArgoprojV1alpha1().WorkflowTaskResults("demo").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watching task results: %w", err)
	}
	complete := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if r, ok := ev.Object.(*wfv1.WorkflowTaskResult); ok && r.Labels[common.LabelKeyReportOutputsCompleted] == "true" {
				complete[r.Name] = true
			}
		}
	}()
	return func() map[string]bool {
		w.Stop()
		<-done
		return complete
	}, nil
}

// checkInvariants verifies I1 (no pod node Succeeded without its finalized task result: complete names the
// results seen finalized) and I2 (no successor pod created before its predecessors were fulfilled) on what
// the demo ran.
func checkInvariants(complete map[string]bool, final map[string]*wfv1.Workflow) (string, bool) {
	var violations []string
	succeeded := 0
	for _, wf := range final {
		for _, n := range wf.Status.Nodes {
			if n.Type != wfv1.NodeTypePod || n.Phase != wfv1.NodeSucceeded {
				continue
			}
			succeeded++
			if !complete[n.ID] || n.TaskResultSynced == nil || !*n.TaskResultSynced {
				violations = append(violations, fmt.Sprintf("I1: %s succeeded without a complete task result", n.Name))
			}
		}
		for _, n := range wf.Status.Nodes {
			for _, childID := range n.Children {
				child, ok := wf.Status.Nodes[childID]
				if ok && n.Type == wfv1.NodeTypePod && child.StartedAt.Before(&n.FinishedAt) {
					violations = append(violations, fmt.Sprintf("I2: %s started before its predecessor %s finished", child.Name, n.Name))
				}
			}
		}
	}
	if len(violations) > 0 {
		return "invariants: VIOLATED\n  " + strings.Join(violations, "\n  "), false
	}
	return fmt.Sprintf("invariants: hold — I1: all %d succeeded pod nodes had complete task results; "+
		"I2: no successor started before its predecessor finished", succeeded), true
}

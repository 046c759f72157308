package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitTimeout bounds a step's Wait.
const WaitTimeout = 90 * time.Second

// Result is one step of one run, normalized.
type Result struct {
	Step string
	// Exit is the CLI's exit code; Lines its output (stdout, then stderr after a "stderr:" line), or, for a
	// JSON step, the document's "path = value" lines.
	Exit  int
	Lines []string
	// Note says what went wrong outside the CLI (a wait that timed out, a command that hung).
	Note string
}

// run is one scenario in one namespace and mode.
type scenarioRun struct {
	env    *Env
	target Target
	cli    *CLI
	dir    string
	prefix string
	wfs    []string // saved workflows, the last current
	norm   *Normalizer
	raw    []Output
}

// Run runs scenario s with argo's CLI in mode against target's namespace and returns each step's result.
func (e *Env) Run(ctx context.Context, s Scenario, target Target, mode Mode) ([]Result, error) {
	dir, err := os.MkdirTemp("", "interop-"+s.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", s.Name, err)
	}
	defer os.RemoveAll(dir)
	r := &scenarioRun{env: e, target: target, dir: dir, prefix: s.Name + "-" + string(mode[0]), norm: NewNormalizer()}
	r.norm.LearnAs(target.Namespace, "NAMESPACE")
	r.cli = KubeCLI(e.Argo, dir, e.Kubeconfig, target.Namespace)
	if mode == Server {
		r.cli = ServerCLI(e.Argo, dir, target.Server, target.Namespace)
	}
	for name, text := range s.Files {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(strings.ReplaceAll(text, "{p}", r.prefix)), 0o644); err != nil {
			return nil, fmt.Errorf("running %s: %w", s.Name, err)
		}
	}
	results := make([]Result, len(s.Steps))
	for i, step := range s.Steps {
		results[i] = r.step(ctx, step)
		r.learn(ctx)
	}
	for i, step := range s.Steps {
		r.normalize(&results[i], step, r.raw[i])
	}
	return results, ctx.Err()
}

// step waits for the step's condition, then runs its command.
func (r *scenarioRun) step(ctx context.Context, step Step) Result {
	res := Result{Step: step.Name()}
	if step.Wait != nil {
		res.Note = r.wait(ctx, step.Wait)
	}
	out, err := r.cli.Run(ctx, r.dir, r.expand(step.Args)...)
	if err != nil {
		res.Note = strings.TrimSpace(res.Note + "; " + err.Error())
	}
	r.raw = append(r.raw, out)
	res.Exit = out.Exit
	if step.Save && out.Exit == 0 {
		r.wfs = append(r.wfs, printedName(out.Stdout))
	}
	return res
}

// printedName is the workflow a command printed: its "Name:" line, or the last line of -o name.
func printedName(stdout string) string {
	last := ""
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Name:" {
			return f[1]
		} else if len(f) == 1 {
			last = f[0]
		}
	}
	return last
}

func (r *scenarioRun) current() string {
	if len(r.wfs) == 0 {
		return ""
	}
	return r.wfs[len(r.wfs)-1]
}

func (r *scenarioRun) expand(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "{wf}", r.current())
		a = strings.ReplaceAll(a, "{p}", r.prefix)
		if strings.HasPrefix(a, "{file:") {
			a = filepath.Join(r.dir, strings.TrimSuffix(strings.TrimPrefix(a, "{file:"), "}")+".yaml")
		}
		out[i] = a
	}
	return out
}

// wait polls the current workflow until w holds; it returns what to report when it does not in time.
func (r *scenarioRun) wait(ctx context.Context, w *Wait) string {
	name := r.current()
	wfs := r.env.Client.ArgoprojV1alpha1().Workflows(r.target.Namespace)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		wf, err := wfs.Get(ctx, name, metav1.GetOptions{})
		return err == nil && w.Until(wf), nil
	})
	if err != nil {
		return fmt.Sprintf("waited %s for %s: not reached", WaitTimeout, w.What)
	}
	return ""
}

// learn gives the run's workflows (by creation) and their nodes their placeholders.
func (r *scenarioRun) learn(ctx context.Context) {
	list, err := r.env.Client.ArgoprojV1alpha1().Workflows(r.target.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var mine []wfv1.Workflow
	for _, wf := range list.Items {
		if strings.HasPrefix(wf.Name, r.prefix+"-") {
			mine = append(mine, wf)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool {
		a, b := mine[i].CreationTimestamp, mine[j].CreationTimestamp
		return a.Before(&b) || (a.Equal(&b) && mine[i].Name < mine[j].Name)
	})
	for _, wf := range mine {
		r.norm.Learn(wf.Name)
		for id, n := range wf.Status.Nodes {
			r.norm.LearnAs(id, "node("+r.norm.String(n.Name)+")")
		}
	}
}

// listing reports whether the step lists objects (`list`, `cron list`, `template list`): argo orders the rows
// by times at one-second precision, which two controllers running side by side cannot share, so their rows
// are compared as a set below the header.
func listing(step Step) bool {
	return slices.Contains(step.Args[:min(2, len(step.Args))], "list")
}

// normalize fills res's lines from out.
func (r *scenarioRun) normalize(res *Result, step Step, out Output) {
	if step.JSON && out.Exit == 0 {
		lines, err := r.norm.JSON(out.Stdout)
		if err == nil {
			res.Lines = lines
			return
		}
		res.Note = strings.TrimSpace(res.Note + "; " + err.Error())
	}
	res.Lines = r.norm.Text(out.Stdout)
	if listing(step) && len(res.Lines) > 1 {
		slices.Sort(res.Lines[1:])
	}
	if stderr := r.norm.Text(out.Stderr); len(stderr) > 0 {
		res.Lines = append(append(res.Lines, "stderr:"), stderr...)
	}
}

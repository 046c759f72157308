package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/bench/workload"
	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/cronworkflow"
	"github.com/wfguard/wfguard/test/harness"
)

// checkBombs: every bomb ended Error at the depth after one path down, not a tree.
func checkBombs(p plan, final []*wfv1.Workflow) []violation {
	var out []violation
	for _, wf := range final {
		if !p.bombs[wf.Name] {
			continue
		}
		if wf.Status.Phase != wfv1.WorkflowError || !strings.Contains(wf.Status.Message, workload.RecursionEnded) {
			out = append(out, violation{"recursion", fmt.Sprintf("bomb %s ended %s %q, want Error at the recursion depth", wf.Name, wf.Status.Phase, wf.Status.Message)})
		}
		if n := len(wf.Status.Nodes); n > 5*engine.MaxTemplateDepth {
			out = append(out, violation{"recursion", fmt.Sprintf("bomb %s has %d nodes: its expansion went on past one path to the depth", wf.Name, n)})
		}
	}
	return out
}

// withoutBombs is final without the bombs, which the outcome oracle does not judge (checkBombs does).
func withoutBombs(p plan, final []*wfv1.Workflow) []*wfv1.Workflow {
	var out []*wfv1.Workflow
	for _, wf := range final {
		if !p.bombs[wf.Name] {
			out = append(out, wf)
		}
	}
	return out
}

// cronLoad is the run's CronWorkflows, scheduled on the real clock by a reconciler that talks to the API
// server through the same fault injector as the controller: one Forbid, one Allow, both with history limits.
type cronLoad struct {
	argo   versioned.Interface
	ns     string
	crons  []*wfv1.CronWorkflow
	cancel context.CancelFunc
	done   sync.WaitGroup
}

const (
	cronForbid = "cron-forbid"
	cronAllow  = "cron-allow"
	// cron history limits: what stays once every run completed.
	cronSucceededKept, cronFailedKept = 2, 1
)

func startCrons(ctx context.Context, faulty *rest.Config, argo versioned.Interface, ns string) (*cronLoad, error) {
	r, err := cronworkflow.New(faulty, cronworkflow.Options{Namespace: ns, Workers: 2, RecordKey: harness.RecordKey,
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()})
	if err != nil {
		return nil, err
	}
	c := &cronLoad{argo: argo, ns: ns}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		_ = r.Run(runCtx)
	}()
	for _, spec := range []struct {
		name, schedule string
		policy         wfv1.ConcurrencyPolicy
	}{{cronForbid, "@every 2s", wfv1.ForbidConcurrent}, {cronAllow, "@every 3s", wfv1.AllowConcurrent}} {
		wf, _ := shapes[0](spec.name) // a chain of seeded pods
		cwf := &wfv1.CronWorkflow{ObjectMeta: metav1.ObjectMeta{Name: spec.name}, Spec: wfv1.CronWorkflowSpec{
			Schedules: []string{spec.schedule}, ConcurrencyPolicy: spec.policy, WorkflowSpec: wf.Spec,
			SuccessfulJobsHistoryLimit: ptrInt32(cronSucceededKept), FailedJobsHistoryLimit: ptrInt32(cronFailedKept)}}
		created, err := argo.ArgoprojV1alpha1().CronWorkflows(ns).Create(ctx, cwf, metav1.CreateOptions{})
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("creating %s: %w", spec.name, err)
		}
		c.crons = append(c.crons, created)
	}
	return c, nil
}

func ptrInt32(v int32) *int32 { return &v }

// cronRunsWanted is how many runs each CronWorkflow starts before the run suspends them.
const cronRunsWanted = 3

// started reports whether each CronWorkflow started cronRunsWanted runs (those listed as runs of it,
// pruned ones aside, and the ones its status counted), and says how far each is.
func (c *cronLoad) started(ctx context.Context) (bool, string) {
	list, err := c.argo.ArgoprojV1alpha1().Workflows(c.ns).List(ctx, metav1.ListOptions{LabelSelector: common.LabelKeyCronWorkflow})
	if err != nil {
		return false, err.Error()
	}
	all := true
	var progress []string
	for _, cwf := range c.crons {
		names := map[string]bool{}
		for _, wf := range list.Items {
			if wf.Labels[common.LabelKeyCronWorkflow] == cwf.Name {
				names[wf.Name] = true
			}
		}
		cur, err := c.argo.ArgoprojV1alpha1().CronWorkflows(c.ns).Get(ctx, cwf.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := max(len(names), int(cur.Status.Succeeded+cur.Status.Failed)+len(cur.Status.Active))
		all = all && n >= cronRunsWanted
		progress = append(progress, fmt.Sprintf("%s %d", cwf.Name, n))
	}
	return all, strings.Join(progress, ", ")
}

// suspend stops new runs, so the run can end; the reconciler keeps counting and pruning the runs that end.
func (c *cronLoad) suspend(ctx context.Context) error {
	for _, cwf := range c.crons {
		for {
			cur, err := c.argo.ArgoprojV1alpha1().CronWorkflows(c.ns).Get(ctx, cwf.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Suspend = true
			_, err = c.argo.ArgoprojV1alpha1().CronWorkflows(c.ns).Update(ctx, cur, metav1.UpdateOptions{})
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "the object has been modified") {
				return fmt.Errorf("suspending %s: %w", cwf.Name, err)
			}
		}
	}
	return nil
}

func (c *cronLoad) stop() {
	c.cancel()
	c.done.Wait()
}

// cronRuns are the workflows labelled as runs of cron, by the versions recorded.
func cronRuns(versions []version, cron string) map[string][]version {
	out := map[string][]version{}
	for _, v := range versions {
		if v.wf.Labels[common.LabelKeyCronWorkflow] == cron {
			out[string(v.wf.UID)] = append(out[string(v.wf.UID)], v)
		}
	}
	return out
}

// checkCrons: each CronWorkflow kept scheduling under the faults, a Forbid one never had two runs going at
// once (a run's life: its first recorded version to the first completed one), and the history limits hold.
func checkCrons(h history, final []*wfv1.Workflow) []violation {
	versions, _ := decodeVersions(h)
	var out []violation
	for _, cron := range []string{cronForbid, cronAllow} {
		runs := cronRuns(versions, cron)
		if len(runs) < cronRunsWanted {
			out = append(out, violation{"cron", fmt.Sprintf("%s started %d runs during the run, want at least %d: the schedule stalled", cron, len(runs), cronRunsWanted)})
		}
		if cron == cronForbid {
			out = append(out, overlappingRuns(cron, runs)...)
		}
	}
	return append(out, cronHistoryOver(final)...)
}

// cronHistoryOver reports the CronWorkflows that keep more completed runs than their history limits.
func cronHistoryOver(final []*wfv1.Workflow) []violation {
	var out []violation
	for _, cron := range []string{cronForbid, cronAllow} {
		kept := map[bool]int{}
		for _, wf := range final {
			if wf.Labels[common.LabelKeyCronWorkflow] == cron && wf.Status.Phase.Completed() {
				kept[wf.Status.Phase == wfv1.WorkflowSucceeded]++
			}
		}
		if kept[true] > cronSucceededKept || kept[false] > cronFailedKept {
			out = append(out, violation{"cron", fmt.Sprintf("%s keeps %d succeeded and %d failed runs, over its limits %d and %d",
				cron, kept[true], kept[false], cronSucceededKept, cronFailedKept)})
		}
	}
	return out
}

// cronCounts says how many runs each CronWorkflow started, for the run's report.
func cronCounts(versions []version) string {
	var parts []string
	for _, cron := range []string{cronForbid, cronAllow} {
		parts = append(parts, fmt.Sprintf("%s %d", cron, len(cronRuns(versions, cron))))
	}
	return strings.Join(parts, ", ")
}

// overlappingRuns reports the runs of a Forbid CronWorkflow created while another was still going.
func overlappingRuns(cron string, runs map[string][]version) []violation {
	type life struct {
		name       string
		start, end int64 // end 0: never seen completed
	}
	var lives []life
	for _, vs := range runs {
		l := life{name: vs[0].wf.Name, start: vs[0].rv}
		for _, v := range vs {
			if v.wf.Status.Phase.Completed() {
				l.end = v.rv
				break
			}
		}
		lives = append(lives, l)
	}
	sort.Slice(lives, func(i, j int) bool { return lives[i].start < lives[j].start })
	var out []violation
	for i := 1; i < len(lives); i++ {
		prev := lives[i-1]
		if prev.end == 0 || prev.end > lives[i].start {
			out = append(out, violation{"cron", fmt.Sprintf("%s (concurrencyPolicy Forbid) created %s while %s was still going", cron, lives[i].name, prev.name)})
		}
	}
	return out
}

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// Issue #44 item 1: the schedule timer re-read the clock until two readings were equal, which a real clock's
// never are: with the mutex every reconcile needs held, no CronWorkflow was scheduled and SIGTERM could not
// stop the process. Every other cron test runs on a fake clock; this one runs the binary on the real one.
func TestTheBinarySchedulesCronWorkflowsOnTheRealClockAndStopsOnSIGTERM(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "cronclock")
	if err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	proc := startController(t, "cron-clock", ns)
	argo := versioned.NewForConfigOrDie(cp.Config())
	crons := []string{"every-2s-a", "every-2s-b"}
	for _, name := range crons {
		_, err := argo.ArgoprojV1alpha1().CronWorkflows(ns).Create(t.Context(), &wfv1.CronWorkflow{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: wfv1.CronWorkflowSpec{Schedules: []string{"@every 2s"},
				WorkflowSpec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: containerSpec()}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	started := func(cron string) int {
		got, err := argo.ArgoprojV1alpha1().CronWorkflows(ns).Get(t.Context(), cron, metav1.GetOptions{})
		if err != nil || got.Status.LastScheduledTime == nil {
			return 0
		}
		return int(got.Status.Succeeded+got.Status.Failed) + len(got.Status.Active)
	}
	cpuAtStart, wallAtStart := processCPU(t, proc), time.Now()
	waitUntil(t, "each CronWorkflow started three runs on the real clock", 90*time.Second, func() bool {
		return started(crons[0]) >= 3 && started(crons[1]) >= 3
	})
	cpu, wall := processCPU(t, proc)-cpuAtStart, time.Since(wallAtStart).Seconds()
	// Scheduling four runs a few seconds apart is idle work; a timer loop that spins holds a core.
	if cpu > 0.5*wall {
		t.Errorf("the controller used %.1f CPU-seconds in %.1f s while it scheduled two @every 2s CronWorkflows", cpu, wall)
	}
	runs, err := argo.ArgoprojV1alpha1().Workflows(ns).List(t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyCronWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.Items) == 0 {
		t.Error("no run of either CronWorkflow exists")
	}
	proc.stopWithSIGTERM(t)
}

// processCPU is the controller process's CPU seconds so far, from its /metrics.
func processCPU(t *testing.T, p *controllerProcess) float64 {
	t.Helper()
	waitUntil(t, "/metrics served", 60*time.Second, func() bool { return strings.Contains(p.metricsOrEmpty(), "process_cpu_seconds_total") })
	for _, line := range strings.Split(p.metricsOrEmpty(), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("process_cpu_seconds_total %q: %v", v, err)
			}
			return f
		}
	}
	t.Fatal("/metrics has no process_cpu_seconds_total")
	return 0
}

package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/bench/workload"
)

// ScaleResult is one controller running many workflows at once, from submission until every pod is
// released, with its process's memory and CPU along the way.
type ScaleResult struct {
	Workflows       int `json:"workflows"`
	PodsPerWorkflow int `json:"podsPerWorkflow"`
	Pods            int `json:"pods"`
	// Seconds is submit → every workflow completed (as the bench's watch sees it); ReleasedSeconds is
	// submit → every pod released (its status finalizer removed), which may trail well behind. A controller
	// that has not released every pod by the release deadline leaves HeldAtDeadline pods still holding the
	// finalizer, and ReleasedSeconds is then when the bench stopped waiting: a lower bound.
	Seconds         float64 `json:"seconds"`
	PodsPerSec      float64 `json:"podsPerSec"`
	ReleasedSeconds float64 `json:"releasedSeconds"`
	HeldAtDeadline  int     `json:"heldAtDeadline,omitempty"`
	// UnfinishedAtDeadline workflows (argo's only: see finishOutcome) had not completed by the finish
	// deadline: Seconds then runs from submit to that deadline (a lower bound), PodsPerSec is 0, the release
	// wait is skipped (their pods still run), and the end figures are taken with them still running.
	UnfinishedAtDeadline int `json:"unfinishedAtDeadline,omitempty"`
	// CPUSeconds is the controller process's user + system time, submit → every pod released (or the
	// release deadline, or with workflows unfinished the finish deadline).
	CPUSeconds            float64 `json:"cpuSeconds"`
	CPUSecondsPerWorkflow float64 `json:"cpuSecondsPerWorkflow"`
	// Heap is go_memstats_heap_inuse_bytes from the controller's /metrics (0 where it serves none), RSS is
	// VmRSS: the baseline after the warm-up, the peak sampled during the run (RSS every 250 ms, heap every
	// second), the end once every pod is released and the RSS settled.
	BaselineHeapInuseBytes float64 `json:"baselineHeapInuseBytes"`
	PeakHeapInuseBytes     float64 `json:"peakHeapInuseBytes"`
	EndHeapInuseBytes      float64 `json:"endHeapInuseBytes"`
	BaselineRSSBytes       float64 `json:"baselineRSSBytes"`
	PeakRSSBytes           float64 `json:"peakRSSBytes"`
	EndRSSBytes            float64 `json:"endRSSBytes"`
	// Per workflow: (peak or end - baseline) / workflows.
	PeakHeapBytesPerWorkflow float64 `json:"peakHeapBytesPerWorkflow"`
	EndHeapBytesPerWorkflow  float64 `json:"endHeapBytesPerWorkflow"`
	PeakRSSBytesPerWorkflow  float64 `json:"peakRSSBytesPerWorkflow"`
	// PeakPodsCached and EndPodsCached are wfguard_pods_cached sampled during the run and at the end (nil
	// for a controller that exports none). Completed pods leave the cache, so the end should be about 0.
	PeakPodsCached *float64 `json:"peakPodsCached,omitempty"`
	EndPodsCached  *float64 `json:"endPodsCached,omitempty"`
	// Phases count the workflows' final phases.
	Phases map[wfv1.WorkflowPhase]int `json:"phases"`
}

// scale runs each controller on n diamonds of m pods submitted at once.
func (e *env) scale(ctx context.Context, report *Report) error {
	report.Scale = map[string]*ScaleResult{}
	return e.eachController(func(c string) error {
		res, err := e.scaleOf(ctx, c, e.opts.ScaleWorkflows, e.opts.ScalePodsPerWorkflow)
		if err != nil {
			return err
		}
		report.Scale[c] = res
		return nil
	})
}

// diamondWorkflow is root → c0..c(m-3) → sink (m ≥ 3; fewer: a chain), each consuming an output upstream.
// Most of its pods run at once, so n diamonds hold about n×(m-2) running pods in the controller's cache, in
// three hops whatever m: a chain of m would hold only n, and take m hops of argo's 10 s requeue.
func diamondWorkflow(name string, m int) *wfv1.Workflow {
	if m < 3 {
		return chainWorkflow(name, m)
	}
	tasks := []wfv1.DAGTask{{Name: "root", Template: "step"}}
	var middle []string
	for i := range m - 2 {
		c := fmt.Sprintf("c%d", i)
		middle = append(middle, c)
		tasks = append(tasks, wfv1.DAGTask{Name: c, Template: "step", Dependencies: []string{"root"}, Arguments: workload.Consume("tasks", "root")})
	}
	tasks = append(tasks, wfv1.DAGTask{Name: "sink", Template: "step", Dependencies: middle, Arguments: workload.Consume("tasks", middle[0])})
	return dagWorkflow(name, tasks)
}

func (e *env) scaleOf(ctx context.Context, c string, n, m int) (*ScaleResult, error) {
	obs, err := e.observedNamespace(ctx, "bench-scale-"+c)
	if err != nil {
		return nil, err
	}
	ns := obs.namespace
	defer obs.close()
	node, err := e.startNode(ctx, ns, stepScript())
	if err != nil {
		return nil, err
	}
	defer node.Stop()
	p, err := e.startController(ctx, c, ns, processOptions{metrics: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.stop() }()
	if err := e.warmUp(ctx, p, obs); err != nil {
		return nil, err
	}
	res := &ScaleResult{Workflows: n, PodsPerWorkflow: m, Pods: n * m}
	if res.BaselineHeapInuseBytes, res.BaselineRSSBytes, err = e.settledMemory(ctx, p); err != nil {
		return nil, err
	}
	var wfs []*wfv1.Workflow
	for i := range n {
		wfs = append(wfs, diamondWorkflow(fmt.Sprintf("wf-%04d", i), m))
	}
	cpuBefore, err := p.cpuSeconds()
	if err != nil {
		return nil, err
	}
	peaks := samplePeaks(ctx, p)
	begin := time.Now()
	if err := createAll(ctx, e.argo, ns, wfs); err != nil {
		peaks.stop()
		return nil, err
	}
	// Generous: argo reconciles a workflow at most every 10 s, and everything shares two cores.
	deadline := 10*time.Minute + time.Duration(n*m)*100*time.Millisecond
	waitCtx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	err = obs.waitWorkflows(waitCtx, names(wfs))
	elapsed := time.Since(begin)
	if err != nil {
		exited, _ := p.proc.Exited()
		if res.UnfinishedAtDeadline, err = finishOutcome(c, err, ctx.Err(), exited, obs.unfinished(names(wfs))); err == nil {
			e.opts.progressf("bench:     %s left %d of %d workflows unfinished at the %s deadline", c, res.UnfinishedAtDeadline, n, deadline)
		}
	}
	if err == nil {
		err = noneFailed(obs, names(wfs))
	}
	if err == nil && res.UnfinishedAtDeadline > 0 {
		res.HeldAtDeadline = obs.held() // their pods still run: no release to wait for
	} else if err == nil {
		// Releasing gets a deadline of its own: argo releases its pods through a rate-limited cleanup
		// queue long after its workflows complete. Pods still held then are a figure, not a failure.
		releaseCtx, cancelRelease := context.WithTimeout(ctx, deadline)
		res.HeldAtDeadline = obs.heldOnceReleasedOr(releaseCtx)
		cancelRelease()
		if res.HeldAtDeadline > 0 {
			e.opts.progressf("bench:     %s still holds %d pods' status finalizer %s after its workflows completed", c, res.HeldAtDeadline, deadline)
		}
		err = ctx.Err()
	}
	released := time.Since(begin)
	cpuAfter, cerr := p.cpuSeconds()
	peak := peaks.stop()
	if err != nil {
		return nil, p.failed(err)
	}
	if cerr != nil {
		return nil, p.failed(cerr)
	}
	res.Seconds, res.Phases = elapsed.Seconds(), obs.phases(names(wfs))
	if res.UnfinishedAtDeadline == 0 { // unfinished work has no rate
		res.PodsPerSec = perSecond(n*m, elapsed)
	}
	res.ReleasedSeconds, res.CPUSeconds = released.Seconds(), cpuAfter-cpuBefore
	res.PeakHeapInuseBytes, res.PeakRSSBytes, res.PeakPodsCached = peak.heap, peak.rss, peak.podsCached
	e.opts.progressf("bench:     %d workflows × %d pods done in %s, released in %s", n, m, finishedTime(res), releasedSummary(res))
	if res.EndPodsCached, err = p.podsCachedOnceDrained(ctx); err != nil {
		return nil, err
	}
	endMemory := e.settledMemory
	if res.UnfinishedAtDeadline > 0 {
		endMemory = currentMemory // still working: its memory need not settle
	}
	if res.EndHeapInuseBytes, res.EndRSSBytes, err = endMemory(ctx, p); err != nil {
		return nil, err
	}
	if err := p.saveEndHeapProfile(ctx, filepath.Join(e.tmp, ns+"-"+c+"-")); err != nil {
		return nil, err
	}
	res.PeakRSSBytes = max(res.PeakRSSBytes, res.EndRSSBytes)
	if res.PeakPodsCached != nil && res.EndPodsCached != nil {
		res.PeakPodsCached = ptr(max(*res.PeakPodsCached, *res.EndPodsCached))
	}
	if n > 0 {
		res.CPUSecondsPerWorkflow = res.CPUSeconds / float64(n)
		res.PeakRSSBytesPerWorkflow = (res.PeakRSSBytes - res.BaselineRSSBytes) / float64(n)
		if res.BaselineHeapInuseBytes > 0 {
			res.PeakHeapBytesPerWorkflow = (res.PeakHeapInuseBytes - res.BaselineHeapInuseBytes) / float64(n)
			res.EndHeapBytesPerWorkflow = (res.EndHeapInuseBytes - res.BaselineHeapInuseBytes) / float64(n)
		}
	}
	return res, nil
}

// peakSample is the largest of each figure sampled so far.
type peakSample struct {
	heap, rss  float64
	podsCached *float64
}

type peakSampler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	peak   peakSample
}

// samplePeaks samples the controller's RSS every 250 ms and its /metrics every second until stop.
func samplePeaks(ctx context.Context, p *process) *peakSampler {
	s := &peakSampler{}
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if rss, err := p.rss(); err == nil {
				s.mu.Lock()
				s.peak.rss = max(s.peak.rss, rss)
				s.mu.Unlock()
			}
			if i%4 == 0 {
				s.scrape(ctx, p)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *peakSampler) scrape(ctx context.Context, p *process) {
	m, err := p.metrics(ctx)
	if err != nil || m == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak.heap = max(s.peak.heap, m["go_memstats_heap_inuse_bytes"])
	if v, ok := m[podsCachedMetric]; ok && p.name == ControllerWFGuard {
		if s.peak.podsCached == nil || v > *s.peak.podsCached {
			s.peak.podsCached = ptr(v)
		}
	}
}

// stop ends the sampling and returns the peaks.
func (s *peakSampler) stop() peakSample {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// podsCachedMetric is wfguard's gauge of the pods in its cache (running work; completed pods leave it).
const podsCachedMetric = "wfguard_pods_cached"

// podsCached is the controller's own count of the pods it caches (nil for a controller that exports none).
func (p *process) podsCached(ctx context.Context) (*float64, error) {
	if p.name != ControllerWFGuard {
		return nil, nil
	}
	m, err := p.metrics(ctx)
	if err != nil {
		return nil, p.failed(fmt.Errorf("scraping %s: %w", p.metricsURL, err))
	}
	v, ok := m[podsCachedMetric]
	if !ok {
		return nil, p.failed(fmt.Errorf("%s serves no %s", p.metricsURL, podsCachedMetric))
	}
	return &v, nil
}

// podsCachedOnceDrained is podsCached once it reached 0 or 30 s passed: a pod leaves the cache when the
// controller's watch sees its release (which labels it completed), which may trail the bench's own watch.
// What is left after that is reported, whatever it is.
func (p *process) podsCachedOnceDrained(ctx context.Context) (*float64, error) {
	if p.name != ControllerWFGuard {
		return nil, nil
	}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cached, err := p.podsCached(ctx)
		return err == nil && *cached == 0, nil
	})
	return p.podsCached(ctx)
}

// scaleRows are the scale scenario's figures for the comparison table.
func (r *Report) scaleRows() []ComparisonRow {
	if len(r.Scale) == 0 {
		return nil
	}
	var rows []ComparisonRow
	add := func(figure string, f func(*ScaleResult) string) {
		row := ComparisonRow{Figure: fmt.Sprintf("scale %d × %d: %s", r.Sizes.ScaleWorkflows, r.Sizes.ScalePodsPerWorkflow, figure),
			WFGuard: notApplicable, Argo: notApplicable, Raw: notApplicable, RawPipeline: notApplicable}
		if s := r.Scale[ControllerWFGuard]; s != nil {
			row.WFGuard = f(s)
		}
		if s := r.Scale[ControllerArgo]; s != nil {
			row.Argo = f(s)
		}
		rows = append(rows, row)
	}
	add("time to finish (pods/s)", finishedSummary)
	add("time until every pod is released", releasedSummary)
	add("heap in use peak / end", func(s *ScaleResult) string {
		return fmt.Sprintf("%s / %s", mibOrNA(s.PeakHeapInuseBytes), mibOrNA(s.EndHeapInuseBytes))
	})
	add("peak heap per workflow", func(s *ScaleResult) string { return kibOrNA(s.PeakHeapBytesPerWorkflow, s.PeakHeapInuseBytes) })
	add("RSS peak / end", func(s *ScaleResult) string { return fmt.Sprintf("%s / %s", mib(s.PeakRSSBytes), mib(s.EndRSSBytes)) })
	add("peak RSS per workflow", func(s *ScaleResult) string { return fmt.Sprintf("%.1f KiB", s.PeakRSSBytesPerWorkflow/1024) })
	add("CPU s (per workflow)", func(s *ScaleResult) string {
		return fmt.Sprintf("%.1f (%.1f ms)", s.CPUSeconds, 1000*s.CPUSecondsPerWorkflow)
	})
	add("pods cached peak / end", func(s *ScaleResult) string {
		if s.PeakPodsCached == nil || s.EndPodsCached == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.0f / %.0f", *s.PeakPodsCached, *s.EndPodsCached)
	})
	add("workflow phases", func(s *ScaleResult) string { return phaseSummary(s.Phases) })
	return rows
}

// finishOutcome is what a scale run's wait for its workflows (waitErr) means. A bench cancelled (parentErr),
// a controller process that died, or wfguard (the subject under test) leaving work unfinished is a failure.
// Argo still running with workflows unfinished at the deadline is a figure, their count: argo is the
// reference, measured as it is (it has left a few of 1,000 behind while the API server timed out its
// requests), and its slowness must not lose every other figure of the run.
func finishOutcome(c string, waitErr, parentErr error, exited bool, unfinished int) (int, error) {
	if waitErr == nil {
		return 0, nil
	}
	if parentErr != nil || exited || c != ControllerArgo || unfinished == 0 {
		return 0, waitErr
	}
	return unfinished, nil
}

// finishedTime is the time until every workflow completed, or a lower bound naming how many had not when
// the bench stopped waiting.
func finishedTime(s *ScaleResult) string {
	if s.UnfinishedAtDeadline > 0 {
		return fmt.Sprintf("> %.1f s (%d workflows unfinished)", s.Seconds, s.UnfinishedAtDeadline)
	}
	return fmt.Sprintf("%.1f s", s.Seconds)
}

// finishedSummary is finishedTime with the rate, once every workflow finished.
func finishedSummary(s *ScaleResult) string {
	if s.UnfinishedAtDeadline > 0 {
		return finishedTime(s)
	}
	return fmt.Sprintf("%s (%.1f)", finishedTime(s), s.PodsPerSec)
}

// rateOrNA is the scale run's pods/s, notApplicable when workflows were left unfinished.
func rateOrNA(s *ScaleResult) string {
	if s.UnfinishedAtDeadline > 0 {
		return notApplicable
	}
	return fmt.Sprintf("%.1f", s.PodsPerSec)
}

// releasedSummary is the time until every pod was released, or how many were still held when the bench
// stopped waiting.
func releasedSummary(s *ScaleResult) string {
	if s.UnfinishedAtDeadline > 0 {
		return fmt.Sprintf("not waited for (%d pods held)", s.HeldAtDeadline)
	}
	if s.HeldAtDeadline > 0 {
		return fmt.Sprintf("> %.1f s (%d pods still held)", s.ReleasedSeconds, s.HeldAtDeadline)
	}
	return fmt.Sprintf("%.1f s", s.ReleasedSeconds)
}

// kibOrNA prints b as KiB, or n/a when the figure it derives from (of) was not measured.
func kibOrNA(b, of float64) string {
	if of <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}

// writeScale prints the scale scenario's details per controller.
func (r *Report) writeScale(w io.Writer) {
	if len(r.Scale) == 0 {
		return
	}
	fmt.Fprintf(w, "scale: %d workflows × %d pods (diamonds) submitted at once:\n", r.Sizes.ScaleWorkflows, r.Sizes.ScalePodsPerWorkflow)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Controllers {
		s := r.Scale[c]
		if s == nil {
			continue
		}
		cached := "n/a"
		if s.PeakPodsCached != nil && s.EndPodsCached != nil {
			cached = fmt.Sprintf("%.0f peak, %.0f end", *s.PeakPodsCached, *s.EndPodsCached)
		}
		fmt.Fprintf(tw, "  %s\tdone %s, released %s\t%s pods/s\theap %s → peak %s → end %s\tRSS %s → peak %s → end %s\tCPU %.1f s\tpods cached %s\n", c,
			finishedTime(s), releasedSummary(s), rateOrNA(s), mibOrNA(s.BaselineHeapInuseBytes), mibOrNA(s.PeakHeapInuseBytes), mibOrNA(s.EndHeapInuseBytes),
			mib(s.BaselineRSSBytes), mib(s.PeakRSSBytes), mib(s.EndRSSBytes), s.CPUSeconds, cached)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

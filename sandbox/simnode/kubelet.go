package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/wfguard/wfguard/internal/apierror"
)

// Journal steps, in the order a healthy pod goes through them.
const (
	StepBound            = "bound"
	StepPending          = "pending"
	StepRunning          = "running"
	StepResultCreated    = "result-created"
	StepMainExited       = "main-exited"
	StepOutputsReported  = "outputs-reported"
	StepResultFinalized  = "result-finalized"
	StepWaitExited       = "wait-exited"
	StepSucceeded        = "succeeded"
	StepFailed           = "failed"
	StepEvicted          = "evicted"
	StepDeletedByOther   = "deleted-by-third-party"
	StepKilled           = "killed"
	StepDeleteFinalized  = "delete-finalized"
	StepRemoved          = "removed"
	StepDeadlineExceeded = "deadline-exceeded"
	StepInvalidPod       = "invalid-pod"
	StepExecutorError    = "executor-error"
	StepResultLost       = "outputs-patch-lost"
	StepResultNotCreated = "result-not-created"
)

// errDeleted ends a pod's run when it was deleted; errDeadline when it outlived activeDeadlineSeconds.
var (
	errDeleted  = errors.New("pod deleted")
	errDeadline = errors.New("pod exceeded its active deadline")
)

// runPod drives one pod from Pending to a terminal phase, as kubelet and argoexec would.
func (n *Node) runPod(ctx context.Context, pod *corev1.Pod, run *podRun) {
	info, err := podInfo(pod)
	if err != nil {
		// A pod argoexec could not run: init fails, as a real init container would.
		n.record(pod, StepInvalidPod)
		n.opts.Logf("simnode: %v", err)
		_ = n.setStatus(ctx, pod, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodFailed
			s.Message = err.Error()
			s.InitContainerStatuses = []corev1.ContainerStatus{terminatedStatus(pod, common.InitContainerName, 1, "Error", n.now())}
		})
		n.record(pod, StepFailed)
		return
	}
	b := n.opts.Script.behaviorFor(info)
	sim := &podSim{n: n, pod: pod, info: info, b: b, run: run}
	if err := sim.lifecycle(ctx); err != nil {
		if errors.Is(err, errDeadline) {
			err = sim.exceedDeadline(ctx)
		}
		if errors.Is(err, errDeleted) {
			n.finishDeletion(ctx, sim.pod)
			return
		}
		if ctx.Err() == nil && !isGone(err) {
			n.opts.Logf("simnode: pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}
}

// podSim is one pod's run through the stages of lifecycle, and what a stage leaves for the later ones.
type podSim struct {
	n    *Node
	pod  *corev1.Pod
	info PodInfo
	b    Behavior
	run  *podRun
	exec *executor
	// running is when the containers started: the pod's conditions keep it as their transition time.
	running metav1.Time
	// placeholder is closed once the wait container is done creating its placeholder result.
	placeholder chan struct{}
}

// lifecycle runs the pod through a kubelet's and argoexec's stages, in order; a fault may end it part-way.
func (p *podSim) lifecycle(ctx context.Context) error {
	if err := p.schedule(ctx); err != nil {
		return err
	}
	if err := p.runInit(ctx); err != nil {
		return err
	}
	if err := p.startContainers(ctx); err != nil {
		return err
	}
	if err := p.startWaitContainer(ctx); err != nil {
		return err
	}
	runFor := p.n.jittered(p.b.RunFor, p.b.Jitter)
	switch {
	case p.b.Fault.Evict:
		return p.evictWhileRunning(ctx, runFor)
	case p.b.Fault.DeleteWhileRunning:
		return p.deleteWhileRunning(ctx, runFor)
	}
	if err := p.runMain(ctx, runFor); err != nil {
		return err
	}
	if err := p.exitMain(ctx); err != nil {
		return err
	}
	waitExit, err := p.reportOutputs(ctx)
	if err != nil {
		return err
	}
	if err := p.exitWait(ctx, waitExit); err != nil {
		return err
	}
	return p.awaitDeletion(ctx)
}

// schedule binds the pod to this node, unless it came bound.
func (p *podSim) schedule(ctx context.Context) error {
	if p.pod.Spec.NodeName != "" {
		return nil
	}
	if err := p.n.bind(ctx, p.pod); err != nil {
		return err
	}
	p.n.record(p.pod, StepBound)
	return nil
}

// runInit reports the pod Pending with its init container running, for PendingFor.
func (p *podSim) runInit(ctx context.Context) error {
	n, pod := p.n, p.pod
	start := n.now()
	if err := n.setStatus(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.HostIP = "10.0.0.1"
		s.StartTime = &start
		s.Conditions = conditions(start, false, false)
		s.InitContainerStatuses = []corev1.ContainerStatus{runningStatus(pod, common.InitContainerName, start)}
		s.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			s.ContainerStatuses = append(s.ContainerStatuses, waitingStatus(pod, c.Name, "PodInitializing"))
		}
	}); err != nil {
		return err
	}
	n.record(pod, StepPending)
	return p.sleep(ctx, p.b.PendingFor)
}

// startContainers reports the pod Running: init completed, every container running.
func (p *podSim) startContainers(ctx context.Context) error {
	n, pod := p.n, p.pod
	p.running = n.now()
	if err := n.setStatus(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.PodIP = "10.0.1.1"
		s.Conditions = conditions(p.running, true, true)
		s.InitContainerStatuses = []corev1.ContainerStatus{terminatedStatus(pod, common.InitContainerName, 0, "Completed", p.running)}
		s.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			s.ContainerStatuses = append(s.ContainerStatuses, runningStatus(pod, c.Name, p.running))
		}
	}); err != nil {
		return err
	}
	n.record(pod, StepRunning)
	return nil
}

// startWaitContainer starts the executor, whose placeholder result is created while main runs.
func (p *podSim) startWaitContainer(ctx context.Context) error {
	client, err := p.n.executorClient(p.pod)
	if err != nil {
		return err
	}
	p.exec = &executor{n: p.n, pod: p.pod, info: p.info, b: p.b, client: client}
	p.placeholder = make(chan struct{})
	go p.createPlaceholder(ctx)
	return nil
}

// createPlaceholder is the wait container's first write; HoldBeforeResult holds it back.
func (p *podSim) createPlaceholder(ctx context.Context) {
	defer close(p.placeholder)
	if p.b.HoldBeforeResult != nil {
		select {
		case <-p.b.HoldBeforeResult:
		case <-ctx.Done():
			return
		}
	}
	p.exec.initializeOutput(ctx)
}

// runMainHalfway lets main run half of runFor, the moment a mid-run fault strikes. Main does not end
// before the placeholder is written.
func (p *podSim) runMainHalfway(ctx context.Context, runFor time.Duration) error {
	err := p.sleep(ctx, runFor/2)
	<-p.placeholder
	return err
}

// evictWhileRunning is Fault.Evict: the pod is evicted half-way through main.
func (p *podSim) evictWhileRunning(ctx context.Context, runFor time.Duration) error {
	if err := p.runMainHalfway(ctx, runFor); err != nil {
		return err
	}
	return p.evict(ctx)
}

// deleteWhileRunning is Fault.DeleteWhileRunning: a third party deletes the pod half-way through main.
func (p *podSim) deleteWhileRunning(ctx context.Context, runFor time.Duration) error {
	if err := p.runMainHalfway(ctx, runFor); err != nil {
		return err
	}
	if err := p.n.kube.CoreV1().Pods(p.pod.Namespace).Delete(ctx, p.pod.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting pod as a third party: %w", err)
	}
	p.n.record(p.pod, StepDeletedByOther)
	// The kubelet notices the deletion through the informer, like any other.
	select {
	case <-p.run.deleted:
		p.finalizeOnKill(ctx)
		return errDeleted
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runMain lets main run for runFor, then while Behavior.Hold is open. Main does not end before the
// placeholder is written.
func (p *podSim) runMain(ctx context.Context, runFor time.Duration) error {
	err := p.sleep(ctx, runFor)
	if err == nil && p.b.Hold != nil {
		err = p.hold(ctx)
	}
	<-p.placeholder
	if errors.Is(err, errDeleted) {
		p.finalizeOnKill(ctx)
	}
	return err
}

// exitMain reports main (every container of a containerSet) terminated with Behavior.ExitCode.
func (p *podSim) exitMain(ctx context.Context) error {
	n, pod := p.n, p.pod
	mainExit := n.now()
	if err := n.setStatus(ctx, pod, func(s *corev1.PodStatus) {
		for _, name := range mainContainerNames(p.info.Template) {
			setContainerStatus(s, terminatedStatus(pod, name, p.b.ExitCode, exitReason(p.b.ExitCode), mainExit))
		}
		s.Conditions = conditions(p.running, true, false)
	}); err != nil {
		return err
	}
	n.record(pod, StepMainExited)
	return nil
}

// reportOutputs is the wait container after main exited: after ReportAfter it reports and finalizes the
// result, then stays up while HoldAfterReport is open. It returns the wait container's exit code.
func (p *podSim) reportOutputs(ctx context.Context) (int32, error) {
	if err := p.sleep(ctx, p.n.jittered(p.b.ReportAfter, p.b.Jitter)); err != nil {
		if errors.Is(err, errDeleted) {
			p.finalizeOnKill(ctx)
		}
		return 0, err
	}
	waitExit := p.exec.reportAndFinalize(ctx)
	if p.b.HoldAfterReport != nil {
		if err := runUntil(ctx, p, p.b.HoldAfterReport); err != nil {
			return 0, err
		}
	}
	return waitExit, nil
}

// exitWait reports the wait container terminated with waitExit, and the pod ended: Succeeded only when
// both main and wait exited 0.
func (p *podSim) exitWait(ctx context.Context, waitExit int32) error {
	n, pod := p.n, p.pod
	done := n.now()
	succeeded := p.b.ExitCode == 0 && waitExit == 0
	if err := n.setStatus(ctx, pod, func(s *corev1.PodStatus) {
		setContainerStatus(s, terminatedStatus(pod, common.WaitContainerName, waitExit, exitReason(waitExit), done))
		if succeeded {
			s.Phase = corev1.PodSucceeded
		} else {
			s.Phase = corev1.PodFailed
		}
		s.Conditions = conditions(p.running, true, false)
	}); err != nil {
		return err
	}
	n.record(pod, StepWaitExited)
	if succeeded {
		n.record(pod, StepSucceeded)
	} else {
		n.record(pod, StepFailed)
	}
	return nil
}

// awaitDeletion keeps serving deletion: a terminal pod still needs its kubelet to finish a delete.
func (p *podSim) awaitDeletion(ctx context.Context) error {
	select {
	case <-p.run.deleted:
		return errDeleted
	case <-ctx.Done():
		return nil
	}
}

// evict fails the pod as the kubelet's eviction manager does: no container statuses survive.
func (p *podSim) evict(ctx context.Context) error {
	if err := p.n.setStatus(ctx, p.pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodFailed
		s.Reason = "Evicted"
		s.Message = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."
		s.ContainerStatuses = nil
		s.Conditions = conditions(p.n.now(), true, false)
	}); err != nil {
		return err
	}
	p.n.record(p.pod, StepEvicted)
	p.n.record(p.pod, StepFailed)
	return p.awaitDeletion(ctx)
}

// finalizeOnKill is the wait container on SIGTERM: it reports nothing more but still finalizes the result.
func (p *podSim) finalizeOnKill(ctx context.Context) {
	if p.exec != nil {
		p.exec.finalizeOutput(ctx)
	}
}

// sleep waits d on the node's clock (see runUntil).
func (p *podSim) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		select {
		case <-p.run.deleted:
			return errDeleted
		default:
		}
		if ads := p.run.deadline(); ads != nil && p.pod.Status.StartTime != nil &&
			!p.n.opts.Clock.Now().Before(p.pod.Status.StartTime.Add(time.Duration(*ads)*time.Second)) {
			return errDeadline
		}
		return nil
	}
	return runUntil(ctx, p, p.n.opts.Clock.After(d))
}

// hold keeps main running until the test closes Behavior.Hold (see runUntil).
func (p *podSim) hold(ctx context.Context) error { return runUntil(ctx, p, p.b.Hold) }

// runUntil waits for done. It returns errDeleted if the pod is deleted meanwhile and errDeadline once the
// pod has run longer than its activeDeadlineSeconds (which may be lowered while it waits).
func runUntil[T any](ctx context.Context, p *podSim, done <-chan T) error {
	for {
		var deadline <-chan time.Time
		if ads := p.run.deadline(); ads != nil && p.pod.Status.StartTime != nil {
			left := p.pod.Status.StartTime.Add(time.Duration(*ads) * time.Second).Sub(p.n.opts.Clock.Now())
			if left <= 0 {
				return errDeadline
			}
			deadline = p.n.opts.Clock.After(left)
		}
		select {
		case <-done:
			return nil
		case <-deadline:
			return errDeadline
		case <-p.run.adsChanged:
		case <-p.run.deleted:
			return errDeleted
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// exceedDeadline is the kubelet's active-deadline kill: containers stopped, phase Failed, reason
// DeadlineExceeded. The wait container, signalled, still finalizes its result.
func (p *podSim) exceedDeadline(ctx context.Context) error {
	p.finalizeOnKill(ctx)
	now := p.n.now()
	if err := p.n.setStatus(ctx, p.pod, func(s *corev1.PodStatus) {
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].State.Terminated == nil {
				code := int32(143)
				if s.ContainerStatuses[i].Name == common.WaitContainerName {
					code = 1
				}
				s.ContainerStatuses[i] = terminatedStatus(p.pod, s.ContainerStatuses[i].Name, code, "Error", now)
			}
		}
		s.Phase = corev1.PodFailed
		s.Reason = "DeadlineExceeded"
		s.Message = "Pod was active on the node longer than the specified deadline"
	}); err != nil {
		return err
	}
	p.n.record(p.pod, StepDeadlineExceeded)
	p.n.record(p.pod, StepFailed)
	return p.awaitDeletion(ctx)
}

// finishDeletion is the kubelet's side of a graceful delete: kill what still runs, report the final status,
// then confirm with a zero-grace delete. The object stays (Terminating) until its finalizers are gone.
func (n *Node) finishDeletion(ctx context.Context, pod *corev1.Pod) {
	if !terminal(pod) {
		now := n.now()
		err := n.setStatus(ctx, pod, func(s *corev1.PodStatus) {
			for i := range s.ContainerStatuses {
				if s.ContainerStatuses[i].State.Terminated == nil {
					code := int32(143)
					if s.ContainerStatuses[i].Name == common.WaitContainerName {
						code = 1
					}
					s.ContainerStatuses[i] = terminatedStatus(pod, s.ContainerStatuses[i].Name, code, "Error", now)
				}
			}
			s.Phase = corev1.PodFailed
		})
		if err != nil && ctx.Err() == nil && !isGone(err) {
			n.opts.Logf("simnode: pod %s/%s: reporting killed containers: %v", pod.Namespace, pod.Name, err)
		}
		n.record(pod, StepKilled)
	}
	zero := int64(0)
	err := n.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !isGone(err) && !apierrors.IsConflict(err) {
		if ctx.Err() == nil {
			n.opts.Logf("simnode: pod %s/%s: confirming deletion: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	n.record(pod, StepDeleteFinalized)
}

// statusWriteBackoff is how long a status write keeps trying, about a minute: a loaded API server answers
// conflicts, timeouts and throttling for a while, and a kubelet that gave up after client-go's default four
// tries left its pod in its last phase for good (5 pods of a 1,000 × 10 scale run stayed Pending).
var statusWriteBackoff = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 40, Cap: 2 * time.Second}

// retriableStatusWrite reports whether a status write that failed with err may succeed if tried again: the
// project's transient errors, and a conflict (the write re-reads the pod first).
func retriableStatusWrite(err error) bool {
	return apierror.Transient(err) || apierrors.IsConflict(err)
}

// bind binds the pod to this node, trying again while the API server's answer is retriable, as a
// scheduler would: a bind lost to a loaded API server left its pod Pending for good (1 of a 1,000 × 10
// scale run). A conflict after a try that timed out is that try having landed, if the pod is on this node.
func (n *Node) bind(ctx context.Context, pod *corev1.Pod) error {
	pods := n.kube.CoreV1().Pods(pod.Namespace)
	tried := false
	return retry.OnError(statusWriteBackoff, apierror.Transient, func() error {
		err := pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: n.opts.NodeName},
		}, metav1.CreateOptions{})
		if apierrors.IsConflict(err) && tried {
			fresh, getErr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if getErr != nil {
				return fmt.Errorf("re-reading pod %s/%s after a conflicting bind: %w", pod.Namespace, pod.Name, getErr)
			}
			if fresh.UID == pod.UID && fresh.Spec.NodeName == n.opts.NodeName {
				return nil
			}
		}
		tried = true
		if err != nil {
			return fmt.Errorf("binding pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return nil
	})
}

// setStatus applies mutate to the pod's status through the status subresource, re-reading on conflict and
// trying again while the API server's answer is retriable.
func (n *Node) setStatus(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.PodStatus)) error {
	return retry.OnError(statusWriteBackoff, retriableStatusWrite, func() error {
		next := pod.DeepCopy()
		mutate(&next.Status)
		updated, err := n.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, getErr := n.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if getErr != nil {
				return fmt.Errorf("re-reading pod %s/%s after a conflict: %w", pod.Namespace, pod.Name, getErr)
			}
			fresh.DeepCopyInto(pod)
			return err
		}
		if err != nil {
			return fmt.Errorf("updating status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		updated.DeepCopyInto(pod)
		return nil
	})
}

func (n *Node) now() metav1.Time { return metav1.NewTime(n.opts.Clock.Now().Truncate(time.Second)) }

func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func containerID(pod *corev1.Pod, name string) string {
	sum := sha256.Sum256([]byte(string(pod.UID) + "/" + name))
	return "containerd://" + hex.EncodeToString(sum[:])
}

func imageOf(pod *corev1.Pod, name string) string {
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

func waitingStatus(pod *corev1.Pod, name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: imageOf(pod, name),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func runningStatus(pod *corev1.Pod, name string, at metav1.Time) corev1.ContainerStatus {
	started := true
	return corev1.ContainerStatus{Name: name, Image: imageOf(pod, name), ImageID: imageOf(pod, name),
		ContainerID: containerID(pod, name), Ready: true, Started: &started,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}
}

func terminatedStatus(pod *corev1.Pod, name string, code int32, reason string, at metav1.Time) corev1.ContainerStatus {
	started := false
	return corev1.ContainerStatus{Name: name, Image: imageOf(pod, name), ImageID: imageOf(pod, name),
		ContainerID: containerID(pod, name), Started: &started,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: at, FinishedAt: at, ContainerID: containerID(pod, name)}}}
}

func setContainerStatus(s *corev1.PodStatus, cs corev1.ContainerStatus) {
	for i := range s.ContainerStatuses {
		if s.ContainerStatuses[i].Name == cs.Name {
			if run := s.ContainerStatuses[i].State.Running; run != nil && cs.State.Terminated != nil {
				cs.State.Terminated.StartedAt = run.StartedAt
			}
			s.ContainerStatuses[i] = cs
			return
		}
	}
	s.ContainerStatuses = append(s.ContainerStatuses, cs)
}

func conditions(at metav1.Time, initialized, ready bool) []corev1.PodCondition {
	b := func(v bool) corev1.ConditionStatus {
		if v {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	return []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at},
		{Type: corev1.PodInitialized, Status: b(initialized), LastTransitionTime: at},
		{Type: corev1.ContainersReady, Status: b(ready), LastTransitionTime: at},
		{Type: corev1.PodReady, Status: b(ready), LastTransitionTime: at},
	}
}

// mainContainerNames are the containers that run the user's code and end together with ExitCode: main,
// or every container of a containerSet (argo starts them all in one pod and shows each as a node).
func mainContainerNames(t *wfv1.Template) []string {
	if t == nil {
		return []string{common.MainContainerName}
	}
	return t.GetMainContainerNames()
}

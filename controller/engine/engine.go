package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/clientstatus"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/internal/apierror"
	"github.com/wfguard/wfguard/internal/fanout"
	"github.com/wfguard/wfguard/internal/reportonce"
	"github.com/wfguard/wfguard/memoize"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/synchronization"
	"github.com/wfguard/wfguard/taskresult"
)

// PodControl is the engine's only I/O: it creates pods and stops running ones.
type PodControl interface {
	// CreatePod creates a pod; an existing pod of the same name and workflow is success.
	CreatePod(ctx context.Context, pod *corev1.Pod) error
	// StopPod makes the kubelet end a pod (activeDeadlineSeconds), for shutdown and deadlines.
	StopPod(ctx context.Context, pod *corev1.Pod) error
	// DeletePod deletes a pod no kubelet runs yet.
	DeletePod(ctx context.Context, pod *corev1.Pod) error
}

// ResultControl deletes a node's task result left by a previous run (taskresult.Remover).
type ResultControl interface {
	// Delete deletes the result if it is still the one given (its UID); one already gone is success.
	Delete(ctx context.Context, r *wfv1.WorkflowTaskResult) error
}

// Engine runs argo templates over a workflow's status.
type Engine struct {
	Pods PodControl
	// Results deletes the stale result of a node before its pod is created again (Pass.StaleResults); nil
	// leaves such results alone.
	Results ResultControl
	// PVCs creates and deletes the claims of spec.volumeClaimTemplates; nil errors a workflow that has any.
	PVCs PVCControl
	// PDBs creates and deletes the budget of spec.podDisruptionBudget; nil errors a workflow that has one.
	PDBs PDBControl
	// ServiceAccounts reads the ServiceAccounts executor.serviceAccountName names, in the workflow's own
	// namespace (their token Secrets are mounted for argoexec); nil errors every pod that names one.
	ServiceAccounts ServiceAccountSource
	// Templates reads the WorkflowTemplates and ClusterWorkflowTemplates that templateRef and
	// workflowTemplateRef name; nil fails every reference.
	Templates TemplateSource
	// ConfigMaps reads artifact repository ConfigMaps (spec.artifactRepositoryRef, artifact-repositories);
	// nil means no namespace has a repository.
	ConfigMaps ConfigMapSource
	// ParameterConfigMaps are the ConfigMaps labelled workflows.argoproj.io/configmap-type=Parameter, keyed
	// namespace/name (an informer's indexer), that parameters' valueFrom.configMapKeyRef read; nil: none.
	ParameterConfigMaps common.ConfigMapStore
	// Locks are the controller's mutexes and semaphores (synchronization), shared by all its workflows;
	// nil: a process-wide table.
	Locks *synchronization.Manager
	// Caches reads and writes memoization cache ConfigMaps (memoize); nil: a memoized template errors with
	// argo's "cache could not be found or created".
	Caches memoize.ConfigMaps
	// MemoProvenance seals the cache entries the engine saves and says which entries count (the zero value:
	// unsealed, every entry counts, as argo); MemoMetrics counts the entries it ignored (nil: none).
	MemoProvenance memoize.Provenance
	MemoMetrics    *memoize.Metrics
	// Metrics checks custom metric emissions before they are recorded in a pass; nil: only the rules that
	// need no registry apply when they are emitted.
	Metrics MetricsChecker
	// Validate checks a new workflow's spec; an error fails the workflow with "invalid spec: ...".
	Validate func(wf *wfv1.Workflow) error
	// Config is the controller ConfigMap's config in force (workflowDefaults, executor, mainContainer,
	// workflowRestrictions); nil is an empty config.
	Config controllerconfig.Source
	// Admission holds new workflows Pending beyond parallelism / namespaceParallelism; nil admits all.
	Admission Admission
	// ExecutorImage is --executor-image; "" takes the ConfigMap's executor.image, else argo's image.
	ExecutorImage   string
	InstanceID      string
	StatusFinalizer bool
	// memoSaved are the memoized nodes (workflow UID/node ID) whose outputs this process saved.
	memoSaved sync.Map
	// memoIgnored are the ignored cache entries already reported, by workflow UID and entry.
	memoIgnored reportonce.Keys
	// resolved remembers template resolutions (processArgs).
	resolved resolvedTemplates
	// RecordKey seals the workflows this controller started (AnnotationStartSeal); nil trusts every
	// workflow's status, as before.
	RecordKey *provenance.Key
	// RecordKeySecret is where the record key is kept: no pod of that namespace may read it.
	RecordKeySecret types.NamespacedName
	// Estimates estimate each workflow's and node's duration from the workflow's earlier runs
	// (status.estimatedDuration, argo's estimator); nil estimates nothing.
	Estimates *clientstatus.Estimates
	// OldPodWait bounds how long a node waits for a pod of the same name left by an earlier workflow of
	// the same name (deleted and created again) to go; zero is DefaultOldPodWait.
	OldPodWait time.Duration
}

// DefaultOldPodWait is how long a node waits for an earlier workflow's pod to free its name. The old pod
// goes once the orphan path releases its status finalizer and the garbage collector deletes it: seconds.
const DefaultOldPodWait = 2 * time.Minute

// OldPodPollInterval is how often a node waiting for an earlier workflow's pod tries its create again.
const OldPodPollInterval = time.Second

// WaitingForOldPodPrefix starts the message of a Pending node whose pod name is still taken by a pod of
// an earlier workflow of the same name.
const WaitingForOldPodPrefix = "waiting for the pod of an earlier workflow of the same name to go"

// PodNameTakenError is a create refused because a pod of that name belongs to another workflow UID:
// in practice an earlier workflow of the same name, deleted, whose pod is still going.
type PodNameTakenError struct {
	Namespace, Name string
	// OwnerUID is the workflow UID the existing pod carries.
	OwnerUID string
}

func (e *PodNameTakenError) Error() string {
	return fmt.Sprintf("pod %s/%s already exists for workflow UID %q", e.Namespace, e.Name, e.OwnerUID)
}

// MaxWorkflowSize bounds the encoded new workflow; larger ones cannot be stored in etcd reliably. Once
// running, persist compresses nodes past the controller's MaxWorkflowSize (same default).
const MaxWorkflowSize = extstatus.DefaultMaxWorkflowSize

// shutdown is the effective shutdown strategy: the accepted one in status, else the legacy spec field.
func shutdown(p *Pass) wfv1.ShutdownStrategy {
	if p.Ext != nil && p.Ext.Shutdown != "" {
		return p.Ext.Shutdown
	}
	return p.WF.Spec.Shutdown
}

// suspended is the accepted suspension (a Suspend action) or the legacy spec.suspend; Resume clears both.
func suspended(p *Pass) bool {
	return (p.Ext != nil && p.Ext.Suspended != nil && *p.Ext.Suspended) || (p.WF.Spec.Suspend != nil && *p.WF.Spec.Suspend)
}

func deadline(wf *wfv1.Workflow) time.Time {
	if wf.Spec.ActiveDeadlineSeconds == nil || wf.Status.StartedAt.IsZero() {
		return time.Time{}
	}
	return wf.Status.StartedAt.Add(time.Duration(*wf.Spec.ActiveDeadlineSeconds) * time.Second)
}

// Start validates a new workflow and marks it Running; it returns false when the workflow was rejected.
// A transient API error during validation (e.g. reading a WorkflowTemplate) is returned for a retry.
func (e *Engine) Start(p *Pass) (bool, error) {
	wf := p.WF
	if wf.Status.Phase != wfv1.WorkflowUnknown && wf.Status.Phase != wfv1.WorkflowPending {
		if p.Adopting {
			return e.adopt(p)
		}
		return true, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p.estimate = e.Estimates.For(wf)
	wasThrottled := throttled(wf)
	// Every workflow not yet Running needs a slot, also one waiting for its locks after a restart (the
	// throttle restores only Running ones).
	if !e.admitted(p) {
		return false, nil
	}
	if wf.Status.Phase == wfv1.WorkflowPending && !wasThrottled && e.startSealed(p) {
		return e.startWaiting(ctx, p) // validated when first seen; waiting for its locks
	}
	if wasThrottled {
		wf.Status.Message = ""
	}
	cfg := e.controllerConfig()
	if err := checkRestrictions(cfg, wf); err != nil {
		e.completeWorkflow(p, wfv1.WorkflowError, err.Error())
		return false, nil
	}
	if err := applyWorkflowDefaults(cfg, wf); err != nil {
		e.completeWorkflow(p, wfv1.WorkflowError, err.Error())
		return false, nil
	}
	if err := e.storeWorkflowTemplateSpec(ctx, p); err != nil {
		if apierror.Transient(err) {
			return false, fmt.Errorf("reading the workflow template of %s/%s: %w", wf.Namespace, wf.Name, err)
		}
		e.completeWorkflow(p, wfv1.WorkflowError, err.Error()) // argo errors the workflow with the read's error
		return false, nil
	}
	if err := e.validate(p); err != nil {
		if apierror.Transient(err) {
			return false, fmt.Errorf("validating workflow %s/%s: %w", wf.Namespace, wf.Name, err)
		}
		e.completeWorkflow(p, wfv1.WorkflowFailed, "invalid spec: "+err.Error())
		p.Events = append(p.Events, Event{Warning: true, Reason: ReasonWorkflowInvalid, Message: "invalid spec: " + err.Error()})
		return false, nil
	}
	p.paramConfigMaps = e.ParameterConfigMaps
	if _, err := configMapGlobals(p.configMaps(), p.WF); err != nil {
		e.completeWorkflow(p, wfv1.WorkflowFailed, "failed to set global parameters: "+err.Error())
		return false, nil
	}
	if err := applyWorkflowMetadata(p); err != nil {
		e.completeWorkflow(p, wfv1.WorkflowError, err.Error()) // argo errors the workflow
		return false, nil
	}
	if ok, err := e.startArtifactRepository(ctx, p); !ok || err != nil {
		return false, err
	}
	e.sealStart(p)
	return e.startWaiting(ctx, p)
}

// startWaiting marks a validated workflow Running once it holds its own locks (spec.synchronization).
func (e *Engine) startWaiting(ctx context.Context, p *Pass) (bool, error) {
	wf := p.WF
	restore := p.useExecSpec() // a workflowTemplateRef's spec.synchronization counts
	acquired, err := e.acquireWorkflowLocks(ctx, p)
	restore()
	if !acquired || err != nil {
		return false, err
	}
	if ok, err := e.ensurePDB(ctx, p); !ok || err != nil {
		return false, err
	}
	wf.Status.Phase = wfv1.WorkflowRunning
	wf.Status.StartedAt = p.now()
	// What argo records once it has checked a workflow needs no artifact GC; one that does is refused at start.
	if wf.Status.ArtifactGCStatus == nil {
		wf.Status.ArtifactGCStatus = &wfv1.ArtGCStatus{NotSpecified: true}
	}
	wf.Status.EstimatedDuration = p.estimate.Workflow()
	setLabel(wf, common.LabelKeyPhase, string(wfv1.WorkflowRunning))
	setLabel(wf, common.LabelKeyCompleted, "false")
	if wf.Annotations == nil {
		wf.Annotations = map[string]string{}
	}
	wf.Annotations[common.AnnotationKeyPodNameVersion] = "v2"
	p.Events = append(p.Events, Event{Reason: ReasonWorkflowRunning, Message: "Workflow Running"})
	return true, nil
}

func (e *Engine) validate(p *Pass) error {
	wf := p.WF
	if data, err := json.Marshal(wf); err != nil {
		return fmt.Errorf("encoding the workflow: %w", err)
	} else if len(data) > MaxWorkflowSize {
		return fmt.Errorf("workflow is %d bytes, larger than the %d-byte limit", len(data), MaxWorkflowSize)
	}
	restore := p.useExecSpec() // what runs: the merged spec of a workflowTemplateRef
	err := errors.Join(unsupported(wf), checkLeafOnly(wf))
	restore()
	if err != nil {
		return err
	}
	if e.Validate != nil {
		if err := e.Validate(wf); err != nil {
			return err
		}
	}
	return unsupportedStored(wf)
}

// Execute is the execute phase: it enforces shutdown and deadlines, starts every node whose dependencies
// are fulfilled, and completes the workflow when its entrypoint node is fulfilled.
func (e *Engine) Execute(ctx context.Context, p *Pass) error {
	p.paramConfigMaps = e.ParameterConfigMaps
	if !p.WF.Status.Phase.Completed() {
		p.estimate = e.Estimates.For(p.WF) // the nodes it creates are estimated too
	}
	settleStoppedRetries(p)
	wasCompleted := p.WF.Status.Phase.Completed()
	err := e.saveMemoized(ctx, p) // before successors read a memoized node that just succeeded
	if err == nil {
		err = e.execute(ctx, p)
	}
	if !wasCompleted && p.WF.Status.Phase.Completed() {
		e.deletePDB(ctx, p)
	}
	if !p.WF.Status.Phase.Completed() {
		e.releaseFinishedNodes(p)
	}
	if derr := e.stopMarkedDaemons(ctx, p); derr != nil {
		err = errors.Join(err, derr)
	}
	e.recordCustomMetrics(p)
	if cerr := e.createPods(ctx, p); cerr != nil {
		return errors.Join(err, cerr)
	}
	if gerr := e.collectPVCs(ctx, p); gerr != nil {
		// Best effort, as argo: the claims left are in status, and their owner reference takes them with
		// the workflow; the completed workflow is persisted all the same.
		p.Events = append(p.Events, Event{Warning: true, Reason: ReasonPVCDeleteFailed, Message: gerr.Error()})
	}
	return err
}

func (e *Engine) execute(ctx context.Context, p *Pass) error {
	wf := p.WF
	if wf.Status.Phase.Completed() || wf.Status.Phase == wfv1.WorkflowUnknown {
		return nil
	}
	defer p.useExecSpec()()
	restoreVolumes, err := p.useSubstitutedVolumes()
	if err != nil {
		e.completeWorkflow(p, wfv1.WorkflowError, err.Error()) // argo errors the workflow
		return nil
	}
	defer restoreVolumes()
	if err := e.ensurePVCs(ctx, p); err != nil || wf.Status.Phase.Completed() {
		return err
	}
	if err := e.enforceShutdownAndDeadline(ctx, p); err != nil {
		return err
	}
	if ended, err := e.runEntrypoint(ctx, p); ended || err != nil {
		return err
	}
	if err := e.saveMemoized(ctx, p); err != nil {
		return err
	}
	return e.completeWhenDone(ctx, p)
}

// isAPIError tells a transient API error, with which the pass is persisted and retried with backoff,
// from one that ends the node or the workflow.
func isAPIError(err error) bool {
	var api *apiError
	return errors.As(err, &api)
}

// runEntrypoint executes the entrypoint, unless the workflow is suspended and not shut down. An error it
// cannot retry errors the workflow (ended).
func (e *Engine) runEntrypoint(ctx context.Context, p *Pass) (ended bool, err error) {
	if suspended(p) && !shutdown(p).Enabled() {
		return false, nil
	}
	wf := p.WF
	_, err = e.executeTemplate(ctx, &nodeCall{p: p, name: wf.Name, display: wf.Name, call: templateCall{name: wf.Spec.Entrypoint}, args: wf.Spec.Arguments})
	if err = recordedOnNode(err); err == nil {
		return false, nil
	}
	if isAPIError(err) {
		return true, err
	}
	e.completeWorkflow(p, wfv1.WorkflowError, "error in entry template execution: "+err.Error())
	return true, nil
}

// completeWhenDone completes the workflow once its entrypoint is fulfilled, its hooks are done, its exit
// handler ran and its daemons were stopped; until then a deadline brings the next pass.
func (e *Engine) completeWhenDone(ctx context.Context, p *Pass) error {
	wf := p.WF
	hooksDone, err := e.workflowHooksDone(ctx, p, p.node(wf.Name))
	if err != nil {
		return e.endOnRecursion(p, err) // else transient: the pass is persisted and retried with backoff
	}
	root := p.node(wf.Name)
	if root == nil || !fulfilled(root) || !hooksDone {
		if d := deadline(wf); !d.IsZero() && p.Now.Before(d) {
			p.requeueBy(d)
		}
		return nil
	}
	exitNode, done, err := e.runWorkflowExitHandler(ctx, p, root)
	if err != nil {
		if isAPIError(err) {
			return err
		}
		e.completeWorkflow(p, wfv1.WorkflowError, "error in exit template execution : "+err.Error())
		return nil
	}
	if !done {
		return nil
	}
	if stopDaemons(p, "", true) {
		return nil // the workflow completes after its daemons were stopped and their results are in
	}
	phase, message := workflowOutcome(p, root, exitNode)
	e.completeWorkflow(p, phase, message)
	return nil
}

// workflowOutcome is the phase a workflow ends in, from its entrypoint's node and its exit handler's: a
// shut-down workflow that failed says so, with the requester's reason.
func workflowOutcome(p *Pass, root, exitNode *wfv1.NodeStatus) (wfv1.WorkflowPhase, string) {
	message := root.Message
	if root.FailedOrError() && shutdown(p).Enabled() {
		message = fmt.Sprintf("Stopped with strategy '%s'", shutdown(p))
		if p.Ext != nil && p.Ext.ShutdownMessage != "" {
			message += ": " + p.Ext.ShutdownMessage // the requester's reason, from the Stop or Terminate action
		}
	}
	switch root.Phase {
	case wfv1.NodeSucceeded, wfv1.NodeSkipped, wfv1.NodeOmitted:
		switch {
		case exitNode != nil && exitNode.Phase == wfv1.NodeFailed:
			return wfv1.WorkflowFailed, exitNode.Message
		case exitNode != nil && exitNode.Phase == wfv1.NodeError:
			return wfv1.WorkflowError, exitNode.Message
		}
		return wfv1.WorkflowSucceeded, ""
	case wfv1.NodeError:
		return wfv1.WorkflowError, message
	}
	return wfv1.WorkflowFailed, message
}

// Fail ends the workflow with phase (Failed or Error) and message, as a failed template would: locks are
// released, the completion event is recorded.
func (e *Engine) Fail(p *Pass, phase wfv1.WorkflowPhase, message string) {
	e.completeWorkflow(p, phase, message)
}

func (e *Engine) completeWorkflow(p *Pass, phase wfv1.WorkflowPhase, message string) {
	wf := p.WF
	wf.Status.Phase = phase
	wf.Status.Message = message
	e.releaseWorkflowLocks(p)
	e.forgetMemoSaved(p)
	if wf.Status.StartedAt.IsZero() {
		wf.Status.StartedAt = p.now()
		wf.Status.EstimatedDuration = p.estimate.Workflow() // argo estimates whenever it stamps the start
	}
	wf.Status.FinishedAt = p.now()
	e.Estimates.Forget(wf.UID)
	clientstatus.MarkCompleted(wf)
	setLabel(wf, common.LabelKeyPhase, string(phase))
	setLabel(wf, common.LabelKeyCompleted, "true")
	switch phase {
	case wfv1.WorkflowSucceeded:
		p.Events = append(p.Events, Event{Reason: ReasonWorkflowSucceeded, Message: "Workflow completed"})
	default: // argo reports Failed and Error workflows with the same reason
		p.Events = append(p.Events, Event{Warning: true, Reason: ReasonWorkflowFailed, Message: message})
	}
}

func setLabel(wf *wfv1.Workflow, k, v string) {
	if wf.Labels == nil {
		wf.Labels = map[string]string{}
	}
	wf.Labels[k] = v
}

// enforceShutdownAndDeadline stops running pods and fails waiting nodes when the workflow is shut down
// or past its activeDeadlineSeconds.
func (e *Engine) enforceShutdownAndDeadline(ctx context.Context, p *Pass) error {
	strategy := shutdown(p)
	d := deadline(p.WF)
	pastDeadline := !d.IsZero() && !p.Now.Before(d)
	if !strategy.Enabled() && !pastDeadline {
		return nil
	}
	message := "Step exceeded its deadline"
	if strategy.Enabled() {
		message = fmt.Sprintf("Stopped with strategy '%s'", strategy)
	}
	for id := range p.WF.Status.Nodes {
		n := p.nodeByID(id)
		if n.Phase.Completed() {
			continue
		}
		switch n.Type {
		case wfv1.NodeTypeSuspend:
			p.markPhase(n, wfv1.NodeFailed, message)
		case wfv1.NodeTypePod:
			if err := e.stopPodNode(ctx, p, n, strategy, message); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopPodNode stops a running pod node's pod, keeping message on the node while the kubelet ends it; a
// pod not yet scheduled is deleted and its node failed.
func (e *Engine) stopPodNode(ctx context.Context, p *Pass, n *wfv1.NodeStatus, strategy wfv1.ShutdownStrategy, message string) error {
	pod := p.Pods[n.ID]
	if pod == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	if _, onExit := pod.Labels[common.LabelKeyOnExit]; onExit && (!strategy.Enabled() || strategy.ShouldExecute(true)) {
		return nil // an exit handler's pod: only Terminate stops it; the deadline does not
	}
	if pod.Spec.NodeName == "" {
		// No kubelet will ever enforce a deadline on an unscheduled pod: delete it and fail the node.
		if err := e.Pods.DeletePod(ctx, pod); err != nil {
			return &apiError{fmt.Errorf("deleting unscheduled pod %s of node %s: %w", pod.Name, n.Name, err)}
		}
		taskresult.OpenGate(n)
		p.markPhase(n, wfv1.NodeFailed, message)
		return nil
	}
	if pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds > 1 {
		if err := e.Pods.StopPod(ctx, pod); err != nil {
			return &apiError{fmt.Errorf("stopping pod %s of node %s: %w", pod.Name, n.Name, err)}
		}
	}
	// Argo keeps the node's message on the stop reason while the kubelet ends the pod.
	if n.Message != message {
		n.Message = message
		p.setNode(n)
	}
	return nil
}

// execOpts is how a template is being run.
type execOpts struct {
	// onExit: part of an exit handler, which runs on Stop (not Terminate) and past the workflow deadline.
	onExit bool
	// flag is recorded on the node created (Hooked for exit handlers, Retried for retry attempts).
	flag *wfv1.NodeFlag
	// attempt: one attempt of a retry node, whose retryStrategy is applied by the retry node.
	attempt bool
	// retryParams are an attempt's {{retries}} and {{lastRetry.*}}.
	retryParams common.Parameters
	// attemptBase names a retry's attempts (base(0), base(1), …): the step's or task's own display name,
	// kept when a display-name annotation renames the retry node.
	attemptBase string
	// writtenRetryExpr is the retryStrategy.expression before parameter substitution.
	writtenRetryExpr string
}

func inputsOf(t *wfv1.Template) *wfv1.Inputs {
	if len(t.Inputs.Parameters) == 0 && len(t.Inputs.Artifacts) == 0 {
		return nil
	}
	return t.Inputs.DeepCopy()
}

// podCreate is a pod the pass decided to create.
type podCreate struct {
	pod      *corev1.Pod
	nodeID   string
	nodeName string
}

// createParallelism bounds concurrent pod creations of one pass (a fan-out starts all its children at once).
const createParallelism = 8

// createPods creates the pass's pods concurrently, so a fan-out's last child does not wait for the first
// ones' round trips, then settles each node: a transient failure forgets the node so the next pass builds
// and creates it again (and fails the pass, to be retried); a rejection for good (admission, quota,
// invalid spec) ends the node in Error, as the pod will never run nor report.
func (e *Engine) createPods(ctx context.Context, p *Pass) error {
	creates, staleErr := e.clearStaleResults(ctx, p, p.creates)
	p.creates = nil
	if len(creates) == 0 {
		if staleErr != nil {
			return &apiError{staleErr}
		}
		return nil
	}
	errs := fanout.Each(ctx, createParallelism, len(creates), func(i int) error {
		return e.Pods.CreatePod(ctx, creates[i].pod)
	})
	var transient []error
	for i, c := range creates {
		err := errs[i]
		if err == nil {
			continue
		}
		if taken := (*PodNameTakenError)(nil); errors.As(err, &taken) {
			e.waitForOldPod(p, c, taken)
			continue
		}
		forgetContainerNodes(p, c.nodeID) // argo adds them only once the pod exists
		// A create cut short by the controller stopping may or may not have reached the API server: the
		// next pass finds out by the pod's name, as after any transient failure.
		if apierror.Transient(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			p.forgetNode(c.nodeID)
			transient = append(transient, fmt.Errorf("creating pod %s for node %s: %w", c.pod.Name, c.nodeName, err))
			continue
		}
		if n := p.nodeByID(c.nodeID); n != nil {
			taskresult.OpenGate(n)
			p.markPhase(n, wfv1.NodeError, err.Error())
		}
	}
	if len(transient) > 0 || staleErr != nil {
		return &apiError{errors.Join(append(transient, staleErr)...)}
	}
	return nil
}

// staleResultPoll is how soon a node held back for its stale result is looked at again (the deletion's
// event normally brings the workflow back first).
const staleResultPoll = time.Second

// clearStaleResults deletes the stale result (Pass.StaleResults) of each node about to get its pod, before
// the pod exists: the new executor would otherwise patch the previous run's result, which the merge ignores
// as created before the pod, and the node would wait for a result that never comes. Such a node is not
// created this pass (forgotten, as after a transient create error): the next pass creates it once the cache
// no longer holds the deleted result, so no pass judges the new pod by the old result. It returns the
// creates that go ahead, and the deletions that failed (their nodes are retried the same way).
func (e *Engine) clearStaleResults(ctx context.Context, p *Pass, creates []podCreate) ([]podCreate, error) {
	if e.Results == nil || len(p.StaleResults) == 0 {
		return creates, nil
	}
	var now []podCreate
	var errs []error
	for _, c := range creates {
		stale := p.StaleResults[c.nodeID]
		if stale == nil {
			now = append(now, c)
			continue
		}
		if err := e.Results.Delete(ctx, stale); err != nil {
			errs = append(errs, fmt.Errorf("deleting the previous run's task result of node %s: %w", c.nodeName, err))
		}
		forgetContainerNodes(p, c.nodeID)
		p.forgetNode(c.nodeID)
		p.requeueBy(p.Now.Add(staleResultPoll))
	}
	return now, errors.Join(errs...)
}

// waitForOldPod keeps a node whose pod name is taken by an earlier workflow's pod Pending, saying so, and
// asks for another pass soon; past OldPodWait it errors the node naming the pod. The earlier workflow was
// deleted, so its pod goes once the orphan path releases it: this is a wait, not a failure.
func (e *Engine) waitForOldPod(p *Pass, c podCreate, taken *PodNameTakenError) {
	n := p.nodeByID(c.nodeID)
	if n == nil {
		return
	}
	waited, again := p.oldPodWaits[c.nodeID]
	since := p.Now
	if again {
		if s := waitingSince(waited.Message); !s.IsZero() {
			since = s
		}
	}
	timeout := e.OldPodWait
	if timeout <= 0 {
		timeout = DefaultOldPodWait
	}
	if !p.Now.Before(since.Add(timeout)) {
		// Its pod never existed: no Container nodes (as argo), and no pod of this node will ever report.
		forgetContainerNodes(p, n.ID)
		taskresult.OpenGate(n)
		p.markPhase(n, wfv1.NodeError, fmt.Sprintf("pod %s/%s of an earlier workflow of the same name (UID %s) was still there after %s; "+
			"this node's pod cannot be created under its name (look for a finalizer other than %s on it)", taken.Namespace, taken.Name, taken.OwnerUID, timeout, common.FinalizerPodStatus))
		return
	}
	msg := fmt.Sprintf("%s: pod %s/%s belongs to workflow UID %s (since %s)", WaitingForOldPodPrefix, taken.Namespace, taken.Name, taken.OwnerUID,
		since.UTC().Format(time.RFC3339))
	n.Phase = wfv1.NodePending
	n.Message = msg
	p.setNode(n)
	if !again {
		p.Events = append(p.Events, Event{Reason: ReasonNodeWaitingForOldPod, Message: "Node " + n.Name + ": " + msg})
	}
	p.requeueBy(p.Now.Add(OldPodPollInterval))
}

// waitingForOldPod reports whether a node's pod was not created yet because an earlier workflow's pod
// still has its name.
func waitingForOldPod(n *wfv1.NodeStatus) bool {
	return n.Phase == wfv1.NodePending && strings.HasPrefix(n.Message, WaitingForOldPodPrefix)
}

// apiError is a transient API failure: the pass is retried rather than failing the workflow.
type apiError struct{ err error }

func (e *apiError) Error() string { return e.err.Error() }
func (e *apiError) Unwrap() error { return e.err }

// MaxTemplateDepth bounds template nesting, so a template that calls itself cannot exhaust the stack.
const MaxTemplateDepth = 100

// errorNode records that node nodeName cannot run (its arguments do not resolve): a new Skipped-type
// node in Error, as argo records it, or the existing node marked Error.
func (e *Engine) errorNode(p *Pass, nodeName, displayName, tmplName, boundaryID, msg string) *wfv1.NodeStatus {
	if n := p.node(nodeName); n != nil {
		return p.markPhase(n, wfv1.NodeError, msg)
	}
	n := p.newNode(nodeAt{nodeName, displayName, tmplName, boundaryID}, wfv1.NodeTypeSkipped, wfv1.NodeError, msg)
	p.Events = append(p.Events, nodeEvent(n))
	return n
}

// unresolvedOutputRef matches a {{...}} reference that names outputs, e.g. {{steps.s1.outputs.parameters.out}}.
var unresolvedOutputRef = regexp.MustCompile(`\{\{[^{}]*\boutputs\.(parameters|result|artifacts)\b[^{}]*\}\}`)

// refuseUnresolvedOutputs fails a pod that still carries a {{...outputs...}} reference in a container's
// command, args or environment (ARGO_TEMPLATE included): the output it names was never set, and the pod
// would run with the literal text (I8). Argument substitution leaves unknown references as they are, so
// this is the last point where the node can still error instead. The template's custom metrics are not
// checked: the controller resolves them ({{outputs.parameters.P}} included) when the node completes, and
// argo's ARGO_TEMPLATE carries them unresolved all the same.
func refuseUnresolvedOutputs(pod *corev1.Pod) error {
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		fields := append(slices.Clone(c.Command), c.Args...)
		for _, env := range c.Env {
			fields = append(fields, withoutMetrics(env))
		}
		for _, f := range fields {
			if ref := unresolvedOutputRef.FindString(f); ref != "" {
				return fmt.Errorf("%s: %s in container %s of pod %s; the output it names was never set", UnresolvedOutputsPrefix, ref, c.Name, pod.Name)
			}
		}
	}
	return nil
}

// withoutMetrics is an environment value as refuseUnresolvedOutputs checks it: ARGO_TEMPLATE without the
// template's metrics. A template that does not decode is checked whole.
func withoutMetrics(env corev1.EnvVar) string {
	if env.Name != common.EnvVarTemplate {
		return env.Value
	}
	var t wfv1.Template
	if err := json.Unmarshal([]byte(env.Value), &t); err != nil || t.Metrics == nil {
		return env.Value
	}
	t.Metrics = nil
	data, err := json.Marshal(&t)
	if err != nil {
		return env.Value
	}
	return string(data)
}

// UnresolvedOutputsPrefix starts the message of a node whose pod was refused for an unresolved output reference.
const UnresolvedOutputsPrefix = "refusing to create a pod with an unresolved output reference"

// suppliedOutputs are a suspend node's outputs awaiting a value: its template's output parameters with
// valueFrom.supplied, stored on the node as argo does, so a resume (or the duration's end) can fill them
// with the given value or their default.
func suppliedOutputs(tmpl *wfv1.Template) *wfv1.Outputs {
	var out *wfv1.Outputs
	for _, param := range tmpl.Outputs.Parameters {
		if param.ValueFrom != nil && param.ValueFrom.Supplied != nil {
			if out == nil {
				out = &wfv1.Outputs{}
			}
			out.Parameters = append(out.Parameters, *param.DeepCopy())
		}
	}
	return out
}

// EndWithError ends the workflow Error with message, every unfinished node Error with nodeMessage, without
// running anything further (no exit handler: nothing more can be stored). The persist phase calls it when
// the API server will never accept the pass's status.
func EndWithError(p *Pass, message, nodeMessage string) {
	for id, n := range p.WF.Status.Nodes {
		if !n.Phase.Completed() {
			n.Phase = wfv1.NodeError
			n.Message = nodeMessage
			n.FinishedAt = p.now()
			p.WF.Status.Nodes[id] = n
		}
	}
	wf := p.WF
	wf.Status.Phase = wfv1.WorkflowError
	wf.Status.Message = message
	if wf.Status.StartedAt.IsZero() {
		wf.Status.StartedAt = p.now()
	}
	wf.Status.FinishedAt = p.now()
	clientstatus.MarkCompleted(wf)
	setLabel(wf, common.LabelKeyPhase, string(wfv1.WorkflowError))
	setLabel(wf, common.LabelKeyCompleted, "true")
}

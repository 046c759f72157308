package simnode

import (
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// PodInfo is what the simulated executor knows about a pod, read the way argoexec reads it: the template
// from ARGO_TEMPLATE on the init container, identity from the ARGO_* environment.
type PodInfo struct {
	Pod          *corev1.Pod
	Template     *wfv1.Template
	NodeID       string
	WorkflowName string
	WorkflowUID  string
	InstanceID   string
	// IncludeScriptOutput mirrors ARGO_INCLUDE_SCRIPT_OUTPUT: only then is outputs.result captured.
	IncludeScriptOutput bool
}

// Behavior is the script for one pod: how its main container ends, what the wait container reports,
// and which faults to inject.
type Behavior struct {
	// ExitCode of the main container (of every container of a containerSet); non-zero fails the pod.
	ExitCode int32
	// Parameters are the contents of each declared output parameter's valueFrom.path. A declared parameter
	// that is missing here and has no default makes the wait container fail, as in argoexec.
	Parameters map[string]string
	// Result is the main container's stdout, reported as outputs.result when IncludeScriptOutput is set.
	Result *string
	// Artifacts gives the uploaded location of each declared output artifact by name. A declared,
	// non-optional artifact missing here makes the wait container fail.
	Artifacts map[string]wfv1.ArtifactLocation

	// Timing of the phases; zero means immediately. Jitter (0..1) scales each by a seeded random factor.
	PendingFor  time.Duration // scheduled → init done, containers running
	RunFor      time.Duration // main running
	ReportAfter time.Duration // main exited → outputs patched
	Jitter      float64
	// Hold, when set, keeps main running until it is closed (after RunFor): a test's deterministic gate.
	Hold <-chan struct{}
	// HoldBeforeResult, when set, keeps the wait container from creating its placeholder result until it
	// is closed (main runs meanwhile, and does not exit before the placeholder is written).
	HoldBeforeResult <-chan struct{}
	// HoldAfterReport, when set, keeps the wait container running after it reported and finalized the
	// result, until it is closed: a test's gate between the report and the pod's end.
	HoldAfterReport <-chan struct{}

	Fault Fault
}

// Fault is a programmable failure of one pod. The zero value is a healthy pod.
type Fault struct {
	// NoResult: the wait container never creates the WorkflowTaskResult (nor patches or finalizes it).
	NoResult bool
	// NeverFinalize: placeholder and outputs are written but the completed label stays "false" (a failed
	// FinalizeOutput does not change the wait container's exit code).
	NeverFinalize bool
	// LoseOutputs: the outputs patch is lost; the placeholder is finalized without outputs.
	LoseOutputs bool
	// WaitExitCode, when non-zero, makes the wait container exit with it after finalizing (as argoexec does
	// when ReportOutputs fails): no outputs are reported and the pod fails.
	WaitExitCode int32
	// Evict: the pod is evicted while running: phase Failed, reason Evicted, no container statuses.
	Evict bool
	// DeleteWhileRunning: a third party deletes the pod (graceful) while main runs.
	DeleteWhileRunning bool
	// ResultDelay delays every task-result write (an overloaded API server or etcd).
	ResultDelay time.Duration
}

// Script chooses a pod's behaviour. Scripts are keyed by template name; Default serves the rest.
type Script struct {
	ByTemplate map[string]Behavior
	Default    Behavior
	// Func, when set, decides for every pod and overrides the rest.
	Func func(PodInfo) Behavior
}

func (s Script) behaviorFor(info PodInfo) Behavior {
	if s.Func != nil {
		return s.Func(info)
	}
	if b, ok := s.ByTemplate[info.Template.Name]; ok {
		return b
	}
	return s.Default
}

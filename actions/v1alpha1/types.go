package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Action values (an open enum: the controller fails unknown ones with reason UnknownAction).
const (
	ActionSuspend   = "Suspend"
	ActionResume    = "Resume"
	ActionStop      = "Stop"
	ActionTerminate = "Terminate"
	ActionRetry     = "Retry"
)

// ActionPhase is the lifecycle of an action: Pending until the controller reports exactly one outcome.
type ActionPhase string

// Phases. An empty phase is Pending.
const (
	PhasePending   ActionPhase = "Pending"
	PhaseSucceeded ActionPhase = "Succeeded"
	PhaseFailed    ActionPhase = "Failed"
)

// WorkflowAction asks the controller to perform an action on a workflow; the controller applies it inside
// the workflow's reconcile and reports the outcome on status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wfa
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.workflowRef.name`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkflowAction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowActionSpec   `json:"spec"`
	Status WorkflowActionStatus `json:"status,omitempty"`
}

// WorkflowActionSpec says which workflow and what to do. It is immutable.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
// +kubebuilder:validation:XValidation:rule="[has(self.resume), has(self.stop), has(self.terminate), has(self.retry)].filter(b, b).size() <= 1",message="at most one parameter block may be set"
// +kubebuilder:validation:XValidation:rule="!has(self.resume) || self.action == 'Resume'",message="spec.resume is only allowed with action Resume"
// +kubebuilder:validation:XValidation:rule="!has(self.stop) || self.action == 'Stop'",message="spec.stop is only allowed with action Stop"
// +kubebuilder:validation:XValidation:rule="!has(self.terminate) || self.action == 'Terminate'",message="spec.terminate is only allowed with action Terminate"
// +kubebuilder:validation:XValidation:rule="!has(self.retry) || self.action == 'Retry'",message="spec.retry is only allowed with action Retry"
type WorkflowActionSpec struct {
	WorkflowRef WorkflowRef `json:"workflowRef"`
	// Action is Suspend, Resume, Stop, Terminate or Retry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Action string `json:"action"`
	// +optional
	Resume *ResumeParameters `json:"resume,omitempty"`
	// +optional
	Stop *StopParameters `json:"stop,omitempty"`
	// +optional
	Terminate *TerminateParameters `json:"terminate,omitempty"`
	// +optional
	Retry *RetryParameters `json:"retry,omitempty"`
}

// WorkflowRef names the target workflow in the action's namespace; a UID pins one incarnation of the name.
type WorkflowRef struct {
	// Name is a workflow's name: a DNS subdomain (RFC 1123), as every object name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=128
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// ResumeParameters narrow a Resume to suspend nodes matching a node field selector, and set their outputs.
type ResumeParameters struct {
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	NodeFieldSelector string `json:"nodeFieldSelector,omitempty"`
	// OutputParameters set the resumed nodes' outputs: at most 64, names up to 253 bytes, values up to 32 KiB.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && size(self[k]) <= 32768)",message="outputParameters names are at most 253 bytes and values at most 32768"
	// +optional
	OutputParameters map[string]string `json:"outputParameters,omitempty"`
}

// StopParameters narrow a Stop to suspend nodes matching a node field selector, failed with Message. Without
// a selector the whole workflow stops, and Message says why in the workflow's final message.
type StopParameters struct {
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	NodeFieldSelector string `json:"nodeFieldSelector,omitempty"`
}

// TerminateParameters say why the workflow is terminated: Message lands in its final message.
type TerminateParameters struct {
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// RetryParameters shape a Retry as argo's retry options do: which succeeded nodes run again, and argument
// overrides in argo's NAME=VALUE form.
//
// +kubebuilder:validation:XValidation:rule="!has(self.restartSuccessful) || !self.restartSuccessful || (has(self.nodeFieldSelector) && size(self.nodeFieldSelector) > 0)",message="restartSuccessful needs a nodeFieldSelector naming the succeeded nodes to run again"
type RetryParameters struct {
	// RestartSuccessful also runs again the succeeded nodes matching NodeFieldSelector.
	// +optional
	RestartSuccessful bool `json:"restartSuccessful,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	NodeFieldSelector string `json:"nodeFieldSelector,omitempty"`
	// Parameters override the workflow's argument parameters, each NAME=VALUE: at most 64, each up to 32 KiB.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=32768
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.contains('='))",message="each parameter is NAME=VALUE"
	// +optional
	Parameters []string `json:"parameters,omitempty"`
}

// WorkflowActionStatus is the outcome, written once by the controller; the API server keeps it final, so an
// action can never be reported (or re-applied) twice.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.phase) || oldSelf.phase == 'Pending' || self == oldSelf",message="a terminal status is final"
type WorkflowActionStatus struct {
	// +kubebuilder:validation:Enum=Pending;Succeeded;Failed
	// +optional
	Phase ActionPhase `json:"phase,omitempty"`
	// Reason is a machine-readable CamelCase outcome, e.g. WorkflowNotFound.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Reason string `json:"reason,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Terminal reports whether the action has its outcome.
func (s WorkflowActionStatus) Terminal() bool {
	return s.Phase == PhaseSucceeded || s.Phase == PhaseFailed
}

// WorkflowActionList is a list of WorkflowActions.
//
// +kubebuilder:object:root=true
type WorkflowActionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkflowAction `json:"items"`
}

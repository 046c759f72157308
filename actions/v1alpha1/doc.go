// Package v1alpha1 is the WorkflowAction API (argoproj.io/v1alpha1) and its typed client.
// +kubebuilder:object:generate=true
// +groupName=argoproj.io
package v1alpha1

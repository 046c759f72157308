package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is argoproj.io/v1alpha1, shared with argo's own kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// Resource is the plural resource name.
const Resource = "workflowactions"

// AddToScheme registers WorkflowAction and WorkflowActionList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &WorkflowAction{}, &WorkflowActionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

package fakeapi

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argofake "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
)

// Fakes are one test's fake clientsets: Kubernetes' own kinds in Kube, argo's task results in Argo, and
// every unstructured object (workflows, WorkflowActions, CRDs) in Dynamic (NewDynamic), which also answers
// the requests of Config.
type Fakes struct {
	Kube    *kubefake.Clientset
	Argo    *argofake.Clientset
	Dynamic *dynamicfake.FakeDynamicClient
}

// New puts each object in the fake that serves its kind.
func New(objects ...runtime.Object) Fakes {
	var kube, argo, dynamic []runtime.Object
	for _, obj := range objects {
		switch obj.(type) {
		case *wfv1.WorkflowTaskResult:
			argo = append(argo, obj)
		case *unstructured.Unstructured:
			dynamic = append(dynamic, obj)
		default:
			kube = append(kube, obj)
		}
	}
	return Fakes{Kube: kubefake.NewClientset(kube...), Argo: argofake.NewSimpleClientset(argo...), Dynamic: NewDynamic(dynamic...)}
}

// Actions is a WorkflowAction client whose requests Dynamic answers.
func (f Fakes) Actions() (*actionsv1.Client, error) { return actionsv1.NewForConfig(Config(f.Dynamic)) }

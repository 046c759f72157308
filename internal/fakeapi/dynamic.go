package fakeapi

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// listKinds are the resources the fake lists: the dynamic fake lists only the kinds it was told of.
var listKinds = map[schema.GroupVersionResource]string{
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}:                    "WorkflowList",
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowactions"}:              "WorkflowActionList",
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtaskresults"}:          "WorkflowTaskResultList",
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
}

// NewDynamic is a fake dynamic client holding objects (unstructured) that versions what it stores as the
// API server does: every create and update stores a new resourceVersion, a create without a UID gets one,
// and an update whose resourceVersion is not the stored one is a Conflict. The plain fake stores whatever
// it is sent, so an optimistic write could never lose there.
func NewDynamic(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objects...)
	v := &versions{tracker: client.Tracker()}
	client.PrependReactor("create", "*", v.create)
	client.PrependReactor("update", "*", v.update)
	return client
}

// versions stamps what the tracker stores with resourceVersions, each above every one it saw.
type versions struct {
	tracker clienttesting.ObjectTracker
	mu      sync.Mutex
	last    int64
}

// after is a new resourceVersion above stored and above every one given before.
func (v *versions) after(stored string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n, err := strconv.ParseInt(stored, 10, 64); err == nil && n > v.last {
		v.last = n
	}
	v.last++
	return strconv.FormatInt(v.last, 10)
}

func (v *versions) create(action clienttesting.Action) (bool, runtime.Object, error) {
	obj := action.(clienttesting.CreateAction).GetObject().DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return true, nil, fmt.Errorf("fake create: %w", err)
	}
	m.SetResourceVersion(v.after(""))
	if m.GetUID() == "" {
		m.SetUID(types.UID("uid-" + m.GetResourceVersion()))
	}
	if err := v.tracker.Create(action.GetResource(), obj, action.GetNamespace()); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

func (v *versions) update(action clienttesting.Action) (bool, runtime.Object, error) {
	obj := action.(clienttesting.UpdateAction).GetObject().DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return true, nil, fmt.Errorf("fake update: %w", err)
	}
	gvr, ns := action.GetResource(), action.GetNamespace()
	current, err := v.tracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return true, nil, err
	}
	stored, err := meta.Accessor(current)
	if err != nil {
		return true, nil, fmt.Errorf("fake update: %w", err)
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	m.SetResourceVersion(v.after(stored.GetResourceVersion()))
	m.SetUID(stored.GetUID())
	if err := v.tracker.Update(gvr, obj, ns); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

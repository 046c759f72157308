package controller

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wfguard/wfguard/clientstatus"
)

// IndexSucceededRun maps each Succeeded workflow (phase label) to "label=namespace/value" for each of
// clientstatus.BaselineLabels it carries: the runs a new workflow of the same template or cron is estimated
// from, found without walking the cache.
const IndexSucceededRun = "succeededRun"

func succeededRunKey(label, namespace, value string) string {
	return label + "=" + namespace + "/" + value
}

func indexBySucceededRun(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	labels := o.GetLabels()
	if labels[common.LabelKeyPhase] != string(wfv1.WorkflowSucceeded) {
		return nil, nil
	}
	var keys []string
	for _, label := range clientstatus.BaselineLabels {
		if v, ok := labels[label]; ok {
			keys = append(keys, succeededRunKey(label, o.GetNamespace(), v))
		}
	}
	return keys, nil
}

// newestSucceeded is argo's estimation baseline, from the informer's cache: the newest (creationTimestamp)
// Succeeded workflow of namespace labelled label=value, decoded. Argo looks in its workflow archive when
// the cache has none; wfguard has no archive, so such a workflow is not estimated.
func (c *Controller) newestSucceeded(namespace, label, value string) (*wfv1.Workflow, error) {
	objs, err := c.inf.workflows.GetIndexer().ByIndex(IndexSucceededRun, succeededRunKey(label, namespace, value))
	if err != nil {
		return nil, fmt.Errorf("listing the succeeded runs of %s=%s in %s: %w", label, value, namespace, err)
	}
	var newest *unstructured.Unstructured
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if ok && (newest == nil || u.GetCreationTimestamp().After(newest.GetCreationTimestamp().Time)) {
			newest = u
		}
	}
	if newest == nil {
		return nil, nil
	}
	wf, _, err := c.inflater.FromUnstructured(newest)
	if err != nil {
		return nil, fmt.Errorf("decoding workflow %s/%s, the estimation baseline: %w", newest.GetNamespace(), newest.GetName(), err)
	}
	return wf, nil
}

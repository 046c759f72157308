package controller

import (
	"context"

	argoconfig "github.com/argoproj/argo-workflows/v3/config"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/retention"

	"github.com/wfguard/wfguard/podgc"
)

// configNotifier is a config Source that announces changes (controllerconfig.Watcher).
type configNotifier interface {
	OnChange(func(*argoconfig.Config))
}

// newRetention builds the collector of workflows beyond the controller config's retentionPolicy, over the
// completed workflows of the informer.
func (c *Controller) newRetention() (*retention.Collector, error) {
	return retention.NewCollector(retention.Collector{
		Completed: c.completedWorkflows,
		Policy:    func() *argoconfig.RetentionPolicy { return controllerconfig.CurrentOf(c.opts.Config).RetentionPolicy },
		Delete: func(ctx context.Context, namespace, name string, uid types.UID) error {
			return c.dynamic.Resource(workflowsResource).Namespace(namespace).Delete(ctx, name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		},
		Log: c.log,
	}, c.opts.Registry)
}

func (c *Controller) completedWorkflows() []retention.Workflow {
	var out []retention.Workflow
	for _, obj := range c.inf.workflows.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetLabels()[common.LabelKeyCompleted] != "true" {
			continue
		}
		out = append(out, retention.FromLabels(u.GetNamespace(), u.GetName(), u.GetUID(), u.GetLabels(), u.GetCreationTimestamp()))
	}
	return out
}

// podGCSettings are the controller ConfigMap's podGC settings; unset ones keep wfguard's behaviour
// (delete at once, with the pod's own grace period).
func podGCSettings(cfg *argoconfig.Config) podgc.Settings {
	s := podgc.Settings{GracePeriodSeconds: cfg.PodGCGracePeriodSeconds}
	if d := cfg.PodGCDeleteDelayDuration; d != nil {
		delay := d.Duration
		s.DeleteDelay = &delay
	}
	return s
}

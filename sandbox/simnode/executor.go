package simnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	argoerrs "github.com/argoproj/argo-workflows/v3/util/errors"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// executor plays argoexec's wait container for one pod (cmd/argoexec/commands/wait.go order):
// placeholder result → wait for main → capture outputs → report outputs → finalize (deferred) → exit.
type executor struct {
	n       *Node
	pod     *corev1.Pod
	info    PodInfo
	b       Behavior
	client  versioned.Interface
	created bool
	errs    []error
}

func (e *executor) addError(err error) {
	e.errs = append(e.errs, err)
	e.n.record(e.pod, StepExecutorError)
	e.n.opts.Logf("simnode: pod %s/%s executor: %v", e.pod.Namespace, e.pod.Name, err)
}

// initializeOutput creates the placeholder WorkflowTaskResult labelled report-outputs-completed=false.
func (e *executor) initializeOutput(ctx context.Context) {
	if e.b.Fault.NoResult {
		e.n.record(e.pod, StepResultNotCreated)
		return
	}
	if err := e.upsert(ctx, wfv1.NodeResult{}); err != nil {
		e.addError(fmt.Errorf("creating task result %s: %w", e.info.NodeID, err))
		return
	}
	e.n.record(e.pod, StepResultCreated)
}

// reportAndFinalize captures and reports outputs, finalizes the result, and returns the wait exit code.
func (e *executor) reportAndFinalize(ctx context.Context) int32 {
	defer e.finalizeOutput(ctx)
	if e.b.Fault.WaitExitCode != 0 {
		return e.b.Fault.WaitExitCode
	}
	outputs, err := e.captureOutputs()
	if err != nil {
		e.addError(err)
	}
	switch {
	case e.b.Fault.NoResult:
	case e.b.Fault.LoseOutputs:
		e.n.record(e.pod, StepResultLost)
	default:
		if err := e.upsert(ctx, wfv1.NodeResult{Outputs: outputs}); err != nil {
			e.addError(fmt.Errorf("reporting outputs to task result %s: %w", e.info.NodeID, err))
		} else {
			e.n.record(e.pod, StepOutputsReported)
		}
	}
	if len(e.errs) > 0 {
		return 1
	}
	return 0
}

// finalizeOutput flips the completed label to "true"; its failure does not change the exit code.
func (e *executor) finalizeOutput(ctx context.Context) {
	if e.b.Fault.NoResult || e.b.Fault.NeverFinalize {
		return
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, common.LabelKeyReportOutputsCompleted))
	err := e.retryTransient(ctx, func() error {
		_, err := e.client.ArgoprojV1alpha1().WorkflowTaskResults(e.pod.Namespace).
			Patch(ctx, e.info.NodeID, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		e.n.opts.Logf("simnode: pod %s/%s: finalizing task result: %v", e.pod.Namespace, e.pod.Name, err)
		return
	}
	e.n.record(e.pod, StepResultFinalized)
}

// captureOutputs fills the template's declared outputs from the script, failing where argoexec would.
func (e *executor) captureOutputs() (*wfv1.Outputs, error) {
	outputs := e.info.Template.Outputs.DeepCopy()
	var errs []error
	for i, p := range outputs.Parameters {
		missing := parameterMissing(e.info.Template, p)
		if missing == "" {
			continue
		}
		if v, ok := e.b.Parameters[p.Name]; ok {
			outputs.Parameters[i].Value = wfv1.AnyStringPtr(v)
		} else if p.ValueFrom.Default != nil {
			outputs.Parameters[i].Value = p.ValueFrom.Default
		} else {
			errs = append(errs, fmt.Errorf("saving output parameter %s: %s", p.Name, missing))
		}
	}
	var artifacts wfv1.Artifacts
	for _, a := range outputs.Artifacts {
		loc, ok := e.b.Artifacts[a.Name]
		if !ok {
			if !a.Optional {
				errs = append(errs, fmt.Errorf("saving output artifact %s: path %s does not exist", a.Name, a.Path))
			}
			continue
		}
		a.ArtifactLocation = loc
		artifacts = append(artifacts, a)
	}
	outputs.Artifacts = artifacts
	if e.info.IncludeScriptOutput {
		result := ""
		if e.b.Result != nil {
			result = *e.b.Result
		}
		outputs.Result = &result
	}
	return outputs, errors.Join(errs...)
}

// parameterMissing is argoexec's error when the script gives an output parameter no value: a file it
// reads, or, for a resource template, the created object's field through jsonPath or jqFilter; "" for a
// parameter argoexec does not capture.
func parameterMissing(t *wfv1.Template, p wfv1.Parameter) string {
	switch {
	case p.ValueFrom == nil:
		return ""
	case p.ValueFrom.Path != "":
		return "open " + p.ValueFrom.Path + ": no such file or directory"
	case t.Resource == nil:
		return ""
	case p.ValueFrom.JSONPath != "":
		return "kubectl get -o jsonpath=" + p.ValueFrom.JSONPath + ": not found"
	case p.ValueFrom.JQFilter != "":
		return "jq " + p.ValueFrom.JQFilter + ": no output"
	}
	return ""
}

// upsert creates the result once, then merge-patches it; NotFound after creation re-creates it.
func (e *executor) upsert(ctx context.Context, result wfv1.NodeResult) error {
	return e.retryTransient(ctx, func() error {
		results := e.client.ArgoprojV1alpha1().WorkflowTaskResults(e.pod.Namespace)
		if !e.created {
			_, err := results.Create(ctx, e.newResult(result), metav1.CreateOptions{})
			if err == nil {
				e.created = true
				return nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
			e.created = true
		}
		body, err := json.Marshal(&wfv1.WorkflowTaskResult{NodeResult: result})
		if err != nil {
			return err
		}
		_, err = results.Patch(ctx, e.info.NodeID, types.MergePatchType, body, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			_, err = results.Create(ctx, e.newResult(result), metav1.CreateOptions{})
		}
		return err
	})
}

func (e *executor) newResult(result wfv1.NodeResult) *wfv1.WorkflowTaskResult {
	labels := map[string]string{
		common.LabelKeyWorkflow:               e.info.WorkflowName,
		common.LabelKeyReportOutputsCompleted: "false",
	}
	if e.info.InstanceID != "" {
		labels[common.LabelKeyControllerInstanceID] = e.info.InstanceID
	}
	return &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{
			Name:   e.info.NodeID,
			Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: wfv1.SchemeGroupVersion.String(), Kind: "Workflow",
				Name: e.info.WorkflowName, UID: types.UID(e.info.WorkflowUID),
			}},
		},
		NodeResult: result,
	}
}

// retryTransient retries transient errors with argoexec's backoff (1s, ×2, cap 30s) until ctx ends;
// other errors return at once. Fault.ResultDelay slows every attempt.
func (e *executor) retryTransient(ctx context.Context, f func() error) error {
	backoff := time.Second
	for {
		if d := e.b.Fault.ResultDelay; d > 0 {
			select {
			case <-e.n.opts.Clock.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := f()
		if err == nil || !argoerrs.IsTransientErr(err) {
			return err
		}
		select {
		case <-e.n.opts.Clock.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

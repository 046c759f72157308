package trust

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/controlplanetest"
	"github.com/wfguard/wfguard/test/harness"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.WithControlPlane(m, controlplane.Options{}, func(c *controlplane.ControlPlane) { cp = c }))
}

// env is a cluster-wide controller for one instance ID, a simulated node for the workflow namespace, and
// the namespace itself, whose workflows Submit labels for that instance.
type env struct {
	*harness.Workflows
	t        *testing.T
	instance string
	node     *simnode.Node
}

type envOptions struct {
	// executorAsServiceAccount makes the simulated executor write results as the pod's ServiceAccount,
	// with the pod claims of a pod-bound token.
	executorAsServiceAccount bool
	// controllerAsServiceAccount runs the controller with only config/rbac's controller ClusterRole
	// (harness.AsController), as admission policies that ask the authorizer about it see it in a cluster.
	controllerAsServiceAccount bool
	// script scripts the simulated node's pods.
	script simnode.Script
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ns := harness.Namespace(t, cp.Config(), "trust")
	e := &env{t: t, instance: ns, Workflows: harness.NewWorkflows(t, cp.Config(), ns)}
	e.Labels = map[string]string{common.LabelKeyControllerInstanceID: e.instance}
	config := cp.Config()
	if o.controllerAsServiceAccount {
		config = harness.AsController(t, cp.Config())
	}
	run := harness.Start(t, config, controller.Options{
		Namespace: "", InstanceID: e.instance, Workers: 4, StatusFinalizer: true,
		Validate: controller.ArgoValidator(e.Argo), Logger: harness.Logger(t),
	}, simnode.Options{Config: cp.Config(), Namespace: ns, Script: o.script, ImpersonateServiceAccount: o.executorAsServiceAccount})
	e.Metrics = run.Controller.Registry()
	e.node = run.Node
	return e
}

func mainArgs(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == "main" {
			return strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		}
	}
	return ""
}

// waitAdmission waits until admission answers the dry-run create with a 403 containing refusal, or admits it
// when refusal is "": a policy reaches admission, and leaves it, asynchronously.
func (e *env) waitAdmission(what string, create func(ctx context.Context, dryRun metav1.CreateOptions) error, refusal string) {
	e.t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := create(ctx, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if ctx.Err() == nil {
			last = err
		}
		if refusal == "" {
			return err == nil, nil
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), refusal), nil
	}); err != nil {
		e.t.Fatalf("admission never answered %s with %q (last error %v)", what, refusal, last)
	}
}

package podspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// Progress reporting is on in argo by default with these ticks; argoexec
// only watches the progress file when both are set.
const (
	progressPatchTick = time.Minute
	progressFileTick  = 3 * time.Second
)

func envVar(name, value string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, Value: value}
}

func fieldRefEnvVar(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{
		Name:      name,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath}},
	}
}

// executorEnv is what argoexec (init and wait) needs to find its own pod and
// workflow; the namespace comes from the in-cluster service account instead.
func (b *builder) executorEnv() []corev1.EnvVar {
	env := []corev1.EnvVar{
		fieldRefEnvVar(common.EnvVarPodName, "metadata.name"),
		fieldRefEnvVar(common.EnvVarPodUID, "metadata.uid"),
		envVar(common.EnvVarWorkflowName, b.wf.Name),
		envVar(common.EnvVarWorkflowUID, string(b.wf.UID)),
	}
	if b.in.InstanceID != "" {
		env = append(env, envVar(common.EnvVarInstanceID, b.in.InstanceID))
	}
	if sa := ExecutorServiceAccount(b.wf, b.tmpl); sa != "" {
		env = append(env, envVar(EnvExecutorServiceAccount, sa))
	}
	return env
}

// sharedEnv goes into every container after its own variables. The emissary
// reads ARGO_INCLUDE_SCRIPT_OUTPUT to decide whether to keep stdout, and
// argoexec refuses to start if ARGO_DEADLINE does not parse, hence the zero
// time rather than an empty value when there is no deadline.
func (b *builder) sharedEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		envVar(common.EnvVarNodeID, b.in.NodeID),
		envVar(common.EnvVarIncludeScriptOutput, strconv.FormatBool(b.in.IncludeScriptOutput)),
		envVar(common.EnvVarDeadline, b.in.Deadline.UTC().Format(time.RFC3339)),
		envVar(common.EnvVarProgressFile, common.ArgoProgressPath),
		envVar(common.EnvVarProgressPatchTickDuration, progressPatchTick.String()),
		envVar(common.EnvVarProgressFileTickDuration, progressFileTick.String()),
	}
}

// executorTemplateJSON is the ARGO_TEMPLATE value. Input parameters are
// already substituted into the template, so argo drops them to keep the env
// small; input artifacts stay because init downloads them.
func executorTemplateJSON(tmpl *wfv1.Template) (string, error) {
	simplified := tmpl.DeepCopy()
	simplified.Inputs = wfv1.Inputs{Artifacts: simplified.Inputs.Artifacts}
	data, err := json.Marshal(simplified)
	if err != nil {
		return "", fmt.Errorf("encoding template %s for ARGO_TEMPLATE: %w", tmpl.Name, err)
	}
	if len(data) > TemplateOffloadLimit {
		return "", fmt.Errorf("template %s is %d bytes as JSON, over the %d-byte ARGO_TEMPLATE limit; offloading it to a ConfigMap is not supported yet",
			tmpl.Name, len(data), TemplateOffloadLimit)
	}
	return string(data), nil
}

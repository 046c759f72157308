package podspec

import (
	"fmt"
	"strconv"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Setting either variable on main makes the emissary pause for a debugger;
// argo then drops activeDeadlineSeconds so the pause is not cut short.
var debugPauseEnvVars = []string{"ARGO_DEBUG_PAUSE_BEFORE", "ARGO_DEBUG_PAUSE_AFTER"}

// activeDeadlineSeconds is the earlier of the deadline and the template's own
// activeDeadlineSeconds, so kubelet kills the pod even if wfguard is down.
// A deadline already passed still yields 1 second: the pod is created and
// immediately failed, which records the outcome on the node.
func activeDeadlineSeconds(in Input, tmpl *wfv1.Template) (*int64, error) {
	var limit *int64
	if !in.Deadline.IsZero() {
		remaining := max(int64(in.Deadline.Sub(in.Now)/time.Second), 1)
		limit = &remaining
	}
	templateLimit, err := templateActiveDeadlineSeconds(tmpl)
	if err != nil {
		return nil, err
	}
	if templateLimit != nil && (limit == nil || *templateLimit < *limit) {
		limit = templateLimit
	}
	if hasDebugPause(mainContainerEnv(tmpl)) {
		return nil, nil
	}
	return limit, nil
}

// templateActiveDeadlineSeconds parses the template field, which may be a
// string after parameter substitution.
func templateActiveDeadlineSeconds(tmpl *wfv1.Template) (*int64, error) {
	v := tmpl.ActiveDeadlineSeconds
	if v == nil {
		return nil, nil
	}
	var seconds int64
	if v.Type == intstr.Int {
		seconds = int64(v.IntVal)
	} else {
		parsed, err := strconv.ParseInt(v.StrVal, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("template %s: activeDeadlineSeconds %q is not a whole number of seconds: %w", tmpl.Name, v.StrVal, err)
		}
		seconds = parsed
	}
	if seconds < 1 {
		return nil, fmt.Errorf("template %s: activeDeadlineSeconds must be at least 1, got %d", tmpl.Name, seconds)
	}
	return &seconds, nil
}

func mainContainerEnv(tmpl *wfv1.Template) []corev1.EnvVar {
	if tmpl.Script != nil {
		return tmpl.Script.Env
	}
	if tmpl.Container != nil {
		return tmpl.Container.Env
	}
	return nil
}

func hasDebugPause(env []corev1.EnvVar) bool {
	for _, e := range env {
		for _, name := range debugPauseEnvVars {
			if e.Name == name {
				return true
			}
		}
	}
	return false
}

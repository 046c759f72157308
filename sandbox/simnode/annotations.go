package simnode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Annotations that script a pod from its workflow's template metadata, so examples run on the simulated
// node without test code. Template metadata is substituted like the rest of the template, so values may
// use {{inputs.parameters.x}}. A real cluster ignores them.
const (
	AnnotationExitCode   = "simnode.wfguard.io/exit-code"
	AnnotationResult     = "simnode.wfguard.io/result"
	AnnotationParameters = "simnode.wfguard.io/parameters" // JSON object: output parameter name → value
	AnnotationRunFor     = "simnode.wfguard.io/run-for"    // Go duration
)

// AnnotationScript scripts each pod from its annotations; fallback applies to what they leave unset.
// A malformed annotation fails the pod's main container with exit code 2 and is logged.
func AnnotationScript(fallback Behavior, logf func(string, ...any)) Script {
	return Script{Func: func(info PodInfo) Behavior {
		b := fallback
		a := info.Pod.Annotations
		fail := func(err error) Behavior {
			if logf != nil {
				logf("simnode: pod %s/%s: %v", info.Pod.Namespace, info.Pod.Name, err)
			}
			return Behavior{ExitCode: 2}
		}
		if v, ok := a[AnnotationExitCode]; ok {
			code, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return fail(fmt.Errorf("annotation %s=%q is not an exit code", AnnotationExitCode, v))
			}
			b.ExitCode = int32(code)
		}
		if v, ok := a[AnnotationResult]; ok {
			b.Result = &v
		}
		if v, ok := a[AnnotationParameters]; ok {
			var params map[string]string
			if err := json.Unmarshal([]byte(v), &params); err != nil {
				return fail(fmt.Errorf("annotation %s is not a JSON object of strings: %v", AnnotationParameters, err))
			}
			b.Parameters = params
		}
		if v, ok := a[AnnotationRunFor]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fail(fmt.Errorf("annotation %s=%q is not a duration: %v", AnnotationRunFor, v, err))
			}
			b.RunFor = d
		}
		return b
	}}
}

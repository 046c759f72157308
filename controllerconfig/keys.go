package controllerconfig

import "github.com/argoproj/argo-workflows/v3/config"

// Honoured are the top-level keys wfguard applies (docs/configmap.md says how).
var Honoured = map[string]bool{
	"workflowDefaults":         true,
	"executor":                 true,
	"mainContainer":            true,
	"instanceID":               true,
	"parallelism":              true,
	"namespaceParallelism":     true,
	"nodeEvents":               true,
	"workflowRestrictions":     true,
	"artifactRepository":       true,
	"podGCGracePeriodSeconds":  true,
	"podGCDeleteDelayDuration": true,
}

// ignoredReasons say why a key argo knows is not applied; keys without a reason are not supported yet.
var ignoredReasons = map[string]string{
	"links":              "read by argo-server only",
	"columns":            "read by argo-server only",
	"navColor":           "read by argo-server only",
	"sso":                "read by argo-server only",
	"persistence":        "wfguard has no workflow archive or node status offload",
	"namespace":          "wfguard's namespace comes from --namespaced / --managed-namespace",
	"metricsConfig":      "wfguard serves its metrics on --metrics-port",
	"telemetryConfig":    "wfguard exports no OpenTelemetry",
	"workflowEvents":     "not supported by wfguard yet: workflow Events are always recorded",
	"kubeConfig":         "not supported by wfguard yet: executors use their pod's service account",
	"resourceRateLimit":  "not supported by wfguard yet: pod creation is bounded by --qps and --burst",
	"podSpecLogStrategy": "not supported by wfguard yet",
	"initialDelay":       "not supported by wfguard yet: workflows are processed when first seen",
	"images":             "not supported by wfguard yet: a container without a command is refused",
	"synchronization":    "database-backed locks are not supported; ConfigMap semaphores and mutexes are",
}

// unsupportedReason says why a key set in the ConfigMap has no effect.
func unsupportedReason(key string) string {
	if r, ok := ignoredReasons[key]; ok {
		return r
	}
	return "not supported by wfguard yet"
}

// partlyApplied are settings under honoured keys that wfguard does not apply, keyed by their path.
func partlyApplied(cfg *config.Config) map[string]string {
	out := map[string]string{}
	if cfg.NodeEvents.SendAsPod {
		out["nodeEvents.sendAsPod"] = "node Events are always recorded on the Workflow"
	}
	if cfg.WorkflowRestrictions.MustNotChangeSpec() {
		out["workflowRestrictions.templateReferencing: Secure"] = "applied as Strict: a running workflow's template is not checked for changes"
	}
	return out
}

package compat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Observation is what one controller did with one case.
type Observation struct {
	Case   string `json:"case"`
	Source string `json:"source"`
	// Refused is the API server's error when the Workflow could not even be created.
	Refused  string  `json:"refused,omitempty"`
	Phase    string  `json:"phase"`
	Message  string  `json:"message,omitempty"`
	TimedOut bool    `json:"timedOut,omitempty"`
	Seconds  float64 `json:"seconds"`
	// Nodes by node name: "<displayName> <type> <phase>".
	Nodes map[string]string `json:"nodes,omitempty"`
	// NodeIDs by node name: argo derives an ID from the workflow and node names, and pod names from it.
	NodeIDs map[string]string `json:"nodeIDs,omitempty"`
	// Outputs by node name (and "workflow" for the global ones), flattened.
	Outputs map[string]map[string]string `json:"outputs,omitempty"`
	// Pods by node name, flattened and normalized.
	Pods map[string]map[string]string `json:"pods,omitempty"`
	// Status is the shape of the status argo writes for its clients (clientStatus).
	Status map[string]string `json:"status,omitempty"`
}

func observe(c Case, wf *wfv1.Workflow, pods []*corev1.Pod) Observation {
	o := Observation{Case: c.Name, Source: c.Source, Phase: string(wf.Status.Phase), Message: wf.Status.Message,
		Nodes: map[string]string{}, NodeIDs: map[string]string{}, Outputs: map[string]map[string]string{}, Pods: map[string]map[string]string{}}
	uid := string(wf.UID)
	nodeName := map[string]string{} // node ID → name
	for id, n := range wf.Status.Nodes {
		nodeName[id] = n.Name
		o.NodeIDs[n.Name] = id
		o.Nodes[n.Name] = fmt.Sprintf("%s %s %s", n.DisplayName, n.Type, n.Phase)
		if n.Outputs != nil {
			o.Outputs[n.Name] = flattenJSON(n.Outputs, uid)
		}
	}
	if wf.Status.Outputs != nil {
		o.Outputs["workflow"] = flattenJSON(wf.Status.Outputs, uid)
	}
	o.Status = clientStatus(wf)
	for _, p := range pods {
		name := nodeName[p.Annotations["workflows.argoproj.io/node-id"]]
		if name == "" {
			name = p.Annotations["workflows.argoproj.io/node-name"]
		}
		if name == "" {
			name = "pod " + p.Name
		}
		o.Pods[name] = podShape(p, uid)
	}
	return o
}

// clientStatus is the shape of the status argo writes for its clients (argo get, the UI), robust to
// timing: the final progress of the workflow and of each node (by name), the resource names its and each
// node's resourcesDuration measures (not the seconds, which are the run's), whether estimatedDuration is
// set, and each condition's type and status.
func clientStatus(wf *wfv1.Workflow) map[string]string {
	var conditions []string
	for _, c := range wf.Status.Conditions {
		conditions = append(conditions, string(c.Type)+"="+string(c.Status))
	}
	sort.Strings(conditions)
	out := map[string]string{"progress": string(wf.Status.Progress), "resourcesDuration": resourceNames(wf.Status.ResourcesDuration),
		"estimatedDuration": fmt.Sprint(wf.Status.EstimatedDuration > 0), "conditions": strings.Join(conditions, " ")}
	for _, n := range wf.Status.Nodes {
		out["progress of "+n.Name] = string(n.Progress)
		out["resourcesDuration of "+n.Name] = resourceNames(n.ResourcesDuration)
	}
	return out
}

// resourceNames are the names a resourcesDuration measures, sorted, "" for none.
func resourceNames(d wfv1.ResourcesDuration) string {
	names := make([]string, 0, len(d))
	for name := range d {
		names = append(names, string(name))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

var (
	rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	// saVolume is the service-account token volume the API server's admission adds, with a random suffix.
	saVolume = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)
	// seconds is a duration in argo's %f format ({{workflow.duration}}): wall clock, like a timestamp.
	seconds = regexp.MustCompile(`\b\d+\.\d{6}\b`)
)

// normalize replaces what legitimately differs between two runs: the workflow's UID, wall-clock times and
// durations, and the random suffix of the API server's token volume.
func normalize(s, uid string) string {
	if uid != "" {
		s = strings.ReplaceAll(s, uid, "<uid>")
	}
	s = seconds.ReplaceAllString(rfc3339.ReplaceAllString(s, "<time>"), "<seconds>")
	return saVolume.ReplaceAllString(s, "kube-api-access-<random>")
}

// podShape flattens what a controller decides about a pod: metadata it sets and the spec, with containers,
// env, mounts and volumes keyed by name and ARGO_TEMPLATE expanded, so a diff names the exact field.
func podShape(p *corev1.Pod, uid string) map[string]string {
	out := map[string]string{}
	addMetadata(out, p, uid)
	spec := p.Spec.DeepCopy()
	spec.NodeName = ""
	containers := map[string]corev1.Container{}
	for _, c := range spec.InitContainers {
		containers["init:"+c.Name] = c
	}
	for _, c := range spec.Containers {
		containers[c.Name] = c
	}
	spec.InitContainers, spec.Containers = nil, nil
	volumes := spec.Volumes
	spec.Volumes = nil
	for k, v := range flattenJSON(spec, uid) {
		out["spec."+k] = v
	}
	for _, v := range volumes {
		for k, val := range flattenJSON(v, uid) {
			out["volumes."+normalize(v.Name, uid)+"."+k] = val
		}
	}
	for name, c := range containers {
		addContainer(out, name, c, uid)
	}
	return out
}

// addMetadata adds what a controller sets on a pod's metadata: labels, annotations, finalizers, owners.
func addMetadata(out map[string]string, p *corev1.Pod, uid string) {
	for k, v := range p.Labels {
		out["labels."+k] = normalize(v, uid)
	}
	for k, v := range p.Annotations {
		out["annotations."+k] = normalize(v, uid)
	}
	out["finalizers"] = strings.Join(p.Finalizers, ",")
	for _, r := range p.OwnerReferences {
		out["ownerReferences."+r.Kind+"/"+r.Name] = fmt.Sprintf("controller=%v", r.Controller != nil && *r.Controller)
	}
}

// addContainer adds a container's fields under its name, its env and mounts each by name.
func addContainer(out map[string]string, name string, c corev1.Container, uid string) {
	env, mounts := c.Env, c.VolumeMounts
	c.Env, c.VolumeMounts = nil, nil
	for k, v := range flattenJSON(c, uid) {
		out["containers."+name+"."+k] = v
	}
	for _, e := range env {
		addEnv(out, "containers."+name+".env."+e.Name, e, uid)
	}
	for _, m := range mounts {
		b, _ := json.Marshal(m)
		out["containers."+name+".mounts."+normalize(m.Name, uid)+":"+m.MountPath] = normalize(string(b), uid)
	}
}

// addEnv adds an env var at key: ARGO_TEMPLATE field by field when it is JSON, so a diff names the field.
func addEnv(out map[string]string, key string, e corev1.EnvVar, uid string) {
	if e.Name == "ARGO_TEMPLATE" {
		var t any
		if json.Unmarshal([]byte(e.Value), &t) == nil {
			for k, v := range flattenAny(t, uid) {
				out[key+"."+k] = v
			}
			return
		}
	}
	if e.ValueFrom != nil {
		b, _ := json.Marshal(e.ValueFrom)
		out[key] = "valueFrom " + normalize(string(b), uid)
	} else {
		out[key] = normalize(e.Value, uid)
	}
}

func flattenJSON(v any, uid string) map[string]string {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]string{"": "unmarshalable: " + err.Error()}
	}
	var a any
	_ = json.Unmarshal(b, &a)
	return flattenAny(a, uid)
}

func flattenAny(v any, uid string) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(join(prefix, k), t[k])
			}
		case []any:
			for i, e := range t {
				walk(join(prefix, fmt.Sprint(i)), e)
			}
		case nil:
		default:
			out[prefix] = normalize(fmt.Sprint(t), uid)
		}
	}
	walk("", v)
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

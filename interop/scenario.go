package interop

import (
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Mode is how argo's CLI reaches the cluster.
type Mode string

const (
	// Kube is the CLI in kubernetes mode: a kubeconfig, argo's server code running inside the CLI.
	Kube Mode = "kube"
	// Server is the CLI talking to `argo server` over HTTP (ARGO_SERVER, ARGO_HTTP1), as argo's UI does.
	Server Mode = "server"
)

// Scenario is one feature of argo's clients: steps run one after the other by the same CLI.
type Scenario struct {
	Name string
	// Files are manifests by name, "{p}" in them replaced by the run's prefix; "{file:NAME}" in a step's
	// arguments is the path of one.
	Files map[string]string
	Steps []Step
}

// Step is one argo command. In its arguments "{wf}" is the workflow the scenario last saved, "{p}" the
// run's prefix, "{file:NAME}" a manifest's path.
type Step struct {
	Args []string
	// Wait, when set, must hold for the current workflow before the step runs (checked on the API server,
	// not compared; a wait that times out is reported in the step's result).
	Wait *Wait
	// Save makes the workflow the step printed (its "Name:" line, or with -o name its last line) the current one.
	Save bool
	// JSON compares the output as a JSON document, path by path.
	JSON bool
}

// Name is the step as the report shows it.
func (s Step) Name() string { return strings.Join(s.Args, " ") }

// Wait is a condition on the current workflow.
type Wait struct {
	What  string
	Until func(*wfv1.Workflow) bool
}

// Completed waits for the workflow to end.
var Completed = &Wait{What: "completed", Until: func(wf *wfv1.Workflow) bool { return wf.Status.Phase.Completed() }}

// NodeIs waits for the node with displayName name to reach phase.
func NodeIs(name string, phase wfv1.NodePhase) *Wait {
	return &Wait{What: "node " + name + " " + string(phase), Until: func(wf *wfv1.Workflow) bool {
		for _, n := range wf.Status.Nodes {
			if n.DisplayName == name && n.Phase == phase {
				return true
			}
		}
		return false
	}}
}

func args(s string) []string { return strings.Fields(s) }

// run is a step running an argo command line (split at spaces).
func run(line string) Step { return Step{Args: args(line)} }

// after is a step that waits first.
func after(w *Wait, line string) Step { return Step{Args: args(line), Wait: w} }

// submit saves the workflow the command line submits as the current one.
func submit(line string) Step { return Step{Args: args(line), Save: true} }

// snapshot compares the current workflow as `argo get -o json` shows it, once w holds.
func snapshot(w *Wait) Step { return Step{Args: args("get -o json {wf}"), Wait: w, JSON: true} }

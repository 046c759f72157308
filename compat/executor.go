package compat

import (
	"regexp"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/sandbox/simnode"
)

// The corpus runs on the simulated node, which runs no code: ExecutorModel decides, from the template alone
// and the same way under both controllers, how each pod ends and what it reports.
var (
	// literalExit is an unconditional-looking failing exit in a script or command line.
	literalExit = regexp.MustCompile(`(^|[\s;&|])exit\s+[1-9]|sys\.exit\(\s*[1-9]`)
	// printsJSON is a script that builds its stdout with a JSON library: its result is a list for withParam.
	printsJSON = regexp.MustCompile(`json\.dump|JSON\.stringify|jq `)
)

// servesUntilStopped is never closed: a held daemon ends only when its controller deletes it or cuts its
// deadline.
var servesUntilStopped = make(chan struct{})

// ExecutorModel is the corpus's simulated executor: main (every container of a containerSet) runs for a
// moment (a daemon's until its controller stops it) and exits 1 when its script or command line (any of
// the set's) holds a literal failing exit, else 0; every declared output parameter read from a file is
// "<parameter>-value"; stdout is a JSON list when the script prints JSON, else "<template>-result"; every
// declared output artifact is uploaded under the template's archive location (when it has one).
func ExecutorModel() simnode.Script {
	return simnode.Script{Func: func(info simnode.PodInfo) simnode.Behavior {
		t := info.Template
		b := simnode.Behavior{RunFor: 100 * time.Millisecond, Parameters: map[string]string{}, Artifacts: map[string]wfv1.ArtifactLocation{}}
		code := codeOf(t)
		if literalExit.MatchString(code) {
			b.ExitCode = 1
		}
		result := t.Name + "-result"
		if printsJSON.MatchString(code) {
			result = `["a","b"]`
		}
		b.Result = &result
		if t.IsDaemon() {
			// A daemon serves until its controller stops it. Exiting on its own after a moment would make
			// the outcome a race: whether a controller saw it running before it ended.
			b.Hold = servesUntilStopped
		}
		for _, p := range t.Outputs.Parameters {
			b.Parameters[p.Name] = p.Name + "-value"
		}
		if loc := t.ArchiveLocation; loc != nil && loc.HasLocation() {
			for _, a := range t.Outputs.Artifacts {
				l := loc.DeepCopy()
				_ = l.AppendToKey(a.Name + ".tgz")
				b.Artifacts[a.Name] = *l
			}
		}
		return b
	}}
}

func codeOf(t *wfv1.Template) string {
	var parts []string
	if t.Script != nil {
		parts = append(parts, t.Script.Source)
		parts = append(parts, t.Script.Command...)
		parts = append(parts, t.Script.Args...)
	}
	if t.Container != nil {
		parts = append(parts, t.Container.Command...)
		parts = append(parts, t.Container.Args...)
	}
	for _, c := range t.ContainerSet.GetContainers() { // a failing exit in any container fails the set's pod
		parts = append(parts, c.Command...)
		parts = append(parts, c.Args...)
	}
	return strings.Join(parts, "\n")
}

package e2e_test

import (
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

func TestADaemonServesItsClientAndIsStoppedWhenItsScopeEnds(t *testing.T) {
	e := newEnv(t, envOptions{script: simnode.AnnotationScript(simnode.Behavior{}, t.Logf)})
	const templates = `
  - name: serve
    daemon: true
    metadata: {annotations: {simnode.wfguard.io/run-for: 1h}}
    container: {image: nginx, command: [nginx]}
  - name: call
    inputs: {parameters: [{name: ip}]}
    metadata: {annotations: {simnode.wfguard.io/run-for: 2s}}
    container: {image: curl, command: [curl, "http://{{inputs.parameters.ip}}/"]}
`
	for _, tc := range []struct {
		sentence, name, main, server, client string
	}{
		{"a steps client reads {{steps.server.ip}}", "daemon-steps", `
    steps:
    - - {name: server, template: serve}
    - - {name: client, template: call, arguments: {parameters: [{name: ip, value: "{{steps.server.ip}}"}]}}`,
			"daemon-steps[0].server", "daemon-steps[1].client"},
		{"a DAG client depending on the server reads {{tasks.server.ip}}", "daemon-dag", `
    dag:
      tasks:
      - {name: server, template: serve}
      - {name: client, template: call, depends: server, arguments: {parameters: [{name: ip, value: "{{tasks.server.ip}}"}]}}`,
			"daemon-dag.server", "daemon-dag.client"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			e := e.withT(t)
			wf := e.Submit(`
metadata: {name: ` + tc.name + `}
spec:
  entrypoint: main
  templates:
  - name: main` + tc.main + templates)
			// The client runs while the daemon does: the server node is daemoned, still Running.
			running := e.WaitFor(wf.Name, "ran its client next to the daemon", 30*time.Second, func(wf *wfv1.Workflow) bool {
				c := harness.NodeByName(wf, tc.client)
				return c != nil && c.Phase == wfv1.NodeRunning
			})
			server := harness.NodeByName(running, tc.server)
			if server.Phase != wfv1.NodeRunning || server.Daemoned == nil || !*server.Daemoned || server.PodIP == "" {
				t.Fatalf("while the client runs the server is %s daemoned=%s ip=%q, want Running, daemoned, with its pod IP",
					server.Phase, harness.OptionalBool(server.Daemoned), server.PodIP)
			}
			done := e.WaitCompleted(wf.Name)
			if done.Status.Phase != wfv1.WorkflowSucceeded {
				t.Fatalf("workflow = %s %q, want Succeeded\n%s", done.Status.Phase, done.Status.Message, harness.Describe(done))
			}
			server = harness.NodeByName(done, tc.server)
			if server.Phase != wfv1.NodeSucceeded || server.Daemoned != nil || server.TaskResultSynced == nil || !*server.TaskResultSynced {
				t.Errorf("the daemon ended %s daemoned=%s synced=%s, want Succeeded with its result, no longer daemoned",
					server.Phase, harness.OptionalBool(server.Daemoned), harness.OptionalBool(server.TaskResultSynced))
			}
			if client := harness.NodeByName(done, tc.client); client.Phase != wfv1.NodeSucceeded || client.StartedAt.Before(&server.StartedAt) {
				t.Errorf("client %s started %s, want Succeeded after the server started %s", client.Phase, client.StartedAt, server.StartedAt)
			}
			if !done.Status.FinishedAt.After(server.FinishedAt.Time) && !done.Status.FinishedAt.Equal(&server.FinishedAt) {
				t.Errorf("the workflow finished at %s, before its daemon ended at %s", done.Status.FinishedAt, server.FinishedAt)
			}
			if ads := e.PodOf(done, tc.server).Spec.ActiveDeadlineSeconds; ads == nil || *ads != 1 {
				t.Errorf("the daemon pod's activeDeadlineSeconds = %v, want 1 (stopped at its scope's end)", ads)
			}
			if args := mainArgs(e.PodOf(done, tc.client)); !slices.Contains(args, "http://"+server.PodIP+"/") {
				t.Errorf("the client's command %v lacks the server's IP %s", args, server.PodIP)
			}
		})
	}
}

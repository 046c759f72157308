package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

const daemonRetryDAG = `
metadata: {name: dr, namespace: ns, uid: 33333333-3333-3333-3333-333333333333}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: server, template: serve}
      - {name: client, template: call, depends: server, arguments: {parameters: [{name: ip, value: "{{tasks.server.ip}}"}]}}
  - name: serve
    daemon: true
    retryStrategy: {limit: "1"}
    container: {image: nginx, command: [nginx]}
  - name: call
    inputs: {parameters: [{name: ip}]}
    container: {image: curl, command: [curl], args: ["{{inputs.parameters.ip}}"]}
`

// withIP is pod with another pod IP: a retried daemon comes back at a new address.
func withIP(pod *corev1.Pod, ip string) *corev1.Pod {
	pod.Status.PodIP = ip
	return pod
}

func TestARetriedDaemonServesFromItsCurrentAttemptAndIsStoppedWithIt(t *testing.T) {
	w := newPodWorld(t, daemonRetryDAG)
	wf, pods, seen := w.wf, w.pods, w.seen
	first, second, client := wf.NodeID("dr.server(0)"), wf.NodeID("dr.server(1)"), wf.NodeID("dr.client")
	retry := func(p *Pass) *wfv1.NodeStatus { return p.node("dr.server") }
	w.run([]worldStep{
		{"the workflow starts a Retry node and its first attempt's pod", func() {}, func(p *Pass) string {
			if r := retry(p); r == nil || r.Type != wfv1.NodeTypeRetry || pods.created[first] == nil {
				return "want Retry node dr.server with pod dr.server(0)"
			}
			return ""
		}},
		{"the first attempt is ready: the Retry node is daemoned at its IP and the client starts with it", func() {
			seen[first] = podIn(pods.created[first], corev1.PodRunning, true, "")
		}, func(p *Pass) string {
			r := retry(p)
			if !daemoned(r) || r.Phase != wfv1.NodeRunning || r.PodIP != "10.0.1.7" {
				return "the Retry node is not daemoned at 10.0.1.7: " + string(r.Phase)
			}
			c := pods.created[client]
			if c == nil || !strings.Contains(strings.Join(c.Spec.Containers[1].Args, " "), "10.0.1.7") {
				return "the client did not start with the daemon's IP"
			}
			return ""
		}},
		{"the first attempt exits by itself: it failed, a second attempt starts, the Retry node stays daemoned at the last address", func() {
			seen[first] = podIn(pods.created[first], corev1.PodSucceeded, false, "")
			w.results = append(w.results, completeResult(wf, first))
		}, func(p *Pass) string {
			if a := p.node("dr.server(0)"); a.Phase != wfv1.NodeFailed {
				return "the first attempt is " + string(a.Phase)
			}
			if r := retry(p); !daemoned(r) || r.PodIP != "10.0.1.7" || r.Phase != wfv1.NodeRunning {
				return "the Retry node stopped serving its dependants between attempts"
			}
			if pods.created[second] == nil {
				return "no second attempt"
			}
			return ""
		}},
		{"the second attempt is ready at a new IP: the Retry node follows it", func() {
			seen[second] = withIP(podIn(pods.created[second], corev1.PodRunning, true, ""), "10.0.1.8")
		}, func(p *Pass) string {
			if r := retry(p); !daemoned(r) || r.PodIP != "10.0.1.8" {
				return "the Retry node is not daemoned at the second attempt's IP"
			}
			return ""
		}},
		{"the client ends, so the DAG does: the attempt and its Retry node are stopped, the workflow waits", func() {
			seen[client] = podIn(pods.created[client], corev1.PodSucceeded, false, "")
			w.results = append(w.results, completeResult(wf, client))
		}, func(p *Pass) string {
			if !stoppingDaemon(retry(p)) || !stoppingDaemon(p.node("dr.server(1)")) || len(pods.stopped) != 1 || pods.stopped[0] != second {
				return "the second attempt and its Retry node were not stopped"
			}
			if wf.Status.Phase != wfv1.WorkflowRunning {
				return "the workflow ended before its daemon: " + string(wf.Status.Phase)
			}
			return ""
		}},
		{"the stopped attempt ends with its result: both end Succeeded, as argo marks them, and so does the workflow", func() {
			seen[second] = podIn(pods.created[second], corev1.PodFailed, false, "DeadlineExceeded")
			w.results = append(w.results, completeResult(wf, second))
		}, func(p *Pass) string {
			r, a := retry(p), p.node("dr.server(1)")
			if r.Phase != wfv1.NodeSucceeded || r.Daemoned != nil || a.Phase != wfv1.NodeSucceeded || wf.Status.Phase != wfv1.WorkflowSucceeded {
				return "want Retry, attempt and workflow Succeeded, got " + string(r.Phase) + " " + string(a.Phase) + " " + string(wf.Status.Phase)
			}
			return ""
		}},
	})
}

func TestADaemonThatNeverStaysUpExhaustsItsRetriesAndItsDependantIsOmitted(t *testing.T) {
	w := newPodWorld(t, daemonRetryDAG)
	wf, pods, seen := w.wf, w.pods, w.seen
	exits := func(name string) func() {
		return func() {
			id := wf.NodeID(name)
			seen[id] = podIn(pods.created[id], corev1.PodSucceeded, false, "")
			w.results = append(w.results, completeResult(wf, id))
		}
	}
	w.run([]worldStep{
		{"the workflow starts the first attempt", func() {}, func(p *Pass) string { return "" }},
		{"the first attempt exits before it was seen ready: it failed and is retried", exits("dr.server(0)"), func(p *Pass) string {
			if pods.created[wf.NodeID("dr.server(1)")] == nil {
				return "no second attempt"
			}
			return ""
		}},
		{"the last attempt exits too: the Retry node fails as argo's, the client is omitted, the workflow fails", exits("dr.server(1)"), func(p *Pass) string {
			r, c := p.node("dr.server"), p.node("dr.client")
			if r.Phase != wfv1.NodeFailed || r.Message != "No more retries left" || r.Daemoned != nil {
				return "the Retry node is " + string(r.Phase) + ": " + r.Message
			}
			if c == nil || c.Phase != wfv1.NodeOmitted || pods.created[wf.NodeID("dr.client")] != nil {
				return "the client was not omitted"
			}
			if wf.Status.Phase != wfv1.WorkflowFailed {
				return "the workflow is " + string(wf.Status.Phase)
			}
			return ""
		}},
	})
}

package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/synchronization"
	"github.com/wfguard/wfguard/taskresult"
)

// lockWorld runs workflows on one engine, so they share its lock table; a pod listed in done has
// succeeded with its result complete.
type lockWorld struct {
	t    *testing.T
	e    *Engine
	pods *recordingPods
	now  time.Time
	done map[string]bool
	// outputs are what a finished pod's result reports, by node ID.
	outputs map[string]*wfv1.Outputs
	exts    map[string]*extstatus.Extensions
}

func newLockWorld(t *testing.T, configMaps ...*corev1.ConfigMap) *lockWorld {
	cms := &fakeConfigMaps{objects: map[string]*corev1.ConfigMap{}}
	for _, cm := range configMaps {
		cms.objects[cm.Namespace+"/"+cm.Name] = cm
	}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	return &lockWorld{t: t, pods: pods, now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), done: map[string]bool{},
		exts: map[string]*extstatus.Extensions{}, outputs: map[string]*wfv1.Outputs{},
		e: &Engine{Pods: pods, ConfigMaps: cms, Locks: synchronization.NewManager(nil)}}
}

func (w *lockWorld) workflow(manifest string, created time.Time) *wfv1.Workflow {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(manifest), wf); err != nil {
		w.t.Fatal(err)
	}
	wf.CreationTimestamp = metav1.NewTime(created)
	w.exts[wf.Name] = &extstatus.Extensions{}
	return wf
}

// pass runs one reconcile of wf: the pods the world finished are seen Succeeded with their results.
// pass runs one pass of wf and returns it (its Events).
func (w *lockWorld) pass(wf *wfv1.Workflow) *Pass {
	w.now = w.now.Add(time.Second)
	p := &Pass{WF: wf, Ext: w.exts[wf.Name], Now: w.now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
	var results []*wfv1.WorkflowTaskResult
	for id := range wf.Status.Nodes {
		if created := w.pods.created[id]; created != nil && w.done[id] {
			p.Pods[id] = podIn(created, corev1.PodSucceeded, false, "")
			r := completeResult(wf, id)
			r.Outputs = w.outputs[id].DeepCopy()
			results = append(results, r)
		}
	}
	taskresult.Merge(p.WF, results, p.Pods)
	p.Results = taskresult.Owned(p.WF, results, p.Pods)
	AssessNodes(p)
	if ok, err := w.e.Start(p); err != nil {
		w.t.Fatal(err)
	} else if ok {
		if err := w.e.Execute(context.Background(), p); err != nil {
			w.t.Fatal(err)
		}
	}
	return p
}

const wfLevelMutex = `
metadata: {name: %s, namespace: ns, uid: %s}
spec:
  entrypoint: main
  synchronization: {mutexes: [{name: test}]}
  templates:
  - name: main
    container: {image: busybox, command: [echo]}
`

// A workflow-level mutex lets one workflow run at a time: the next waits Pending with argo's message and
// starts once the holder completes (argo's synchronization-mutex-wf-level).
func TestAWorkflowWaitsPendingForItsMutexAndStartsWhenTheHolderCompletes(t *testing.T) {
	w := newLockWorld(t)
	first := w.workflow(fmt.Sprintf(wfLevelMutex, "first", "11111111-1111-1111-1111-111111111111"), w.now)
	second := w.workflow(fmt.Sprintf(wfLevelMutex, "second", "22222222-2222-2222-2222-222222222222"), w.now.Add(time.Second))
	w.pass(first)
	w.pass(second)
	if first.Status.Phase != wfv1.WorkflowRunning || w.pods.created[first.NodeID("first")] == nil {
		t.Fatalf("the first workflow did not take the free mutex: %s %q", first.Status.Phase, first.Status.Message)
	}
	if h := first.Status.Synchronization.Mutex.Holding; len(h) != 1 || h[0].Holder != "ns/first" || h[0].Mutex != "ns/Mutex/test" {
		t.Fatalf("the holder is not recorded as argo records it: %+v", h)
	}
	if second.Status.Phase != wfv1.WorkflowPending || second.Status.Message != "Waiting for ns/Mutex/test lock. Lock status: 0/1" ||
		len(second.Status.Nodes) != 0 {
		t.Fatalf("the second workflow is %s %q with %d nodes, want Pending waiting with none", second.Status.Phase, second.Status.Message, len(second.Status.Nodes))
	}
	w.done[first.NodeID("first")] = true
	w.pass(first)
	if first.Status.Phase != wfv1.WorkflowSucceeded || first.Status.Synchronization != nil {
		t.Fatalf("the first workflow ended %s still recording %+v", first.Status.Phase, first.Status.Synchronization)
	}
	w.pass(second)
	if second.Status.Phase != wfv1.WorkflowRunning || second.Status.Message != "" || w.pods.created[second.NodeID("second")] == nil {
		t.Fatalf("the second workflow did not start once the mutex was free: %s %q", second.Status.Phase, second.Status.Message)
	}
}

const tmplLevelLock = `
metadata: {name: loop, namespace: ns, uid: 33333333-3333-3333-3333-333333333333}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: lock, template: locked, withParam: '["1","2","3"]'}
  - name: locked
    synchronization: %s
    container: {image: alpine, command: [sh, -c, "sleep 1"]}
`

// A template's locks bound how many of its nodes run: the others wait Pending, without a pod, with argo's
// message, and start as holders finish; a lock that cannot be set up errors the node with argo's message
// and its step group names it (argo's synchronization-*-tmpl-level examples).
func TestATemplatesLocksBoundHowManyOfItsNodesRun(t *testing.T) {
	semaphoreCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "my-config"}, Data: map[string]string{"template": "2"}}
	for _, tc := range []struct {
		sentence    string
		sync        string
		configMap   *corev1.ConfigMap
		wantRunning int
		wantWaiting string
		wantError   string
	}{
		{"a mutex runs the loop's children one at a time", `{mutexes: [{name: welcome}]}`, nil,
			1, "Waiting for ns/Mutex/welcome lock. Lock status: 0/1", ""},
		{"a legacy mutex is the same lock", `{mutex: {name: welcome}}`, nil,
			1, "Waiting for ns/Mutex/welcome lock. Lock status: 0/1", ""},
		{"a semaphore runs as many as its ConfigMap's limit", `{semaphores: [{configMapKeyRef: {name: my-config, key: template}}]}`, semaphoreCM,
			2, "Waiting for ns/ConfigMap/my-config/template lock. Lock status: 0/2", ""},
		{"a semaphore whose ConfigMap is missing errors the node", `{semaphore: {configMapKeyRef: {name: my-config, key: template}}}`, nil,
			0, "", "failed to initialize semaphore ns/ConfigMap/my-config/template with limit"},
		{"a database semaphore errors the node: wfguard has no synchronization database", `{semaphores: [{database: {key: template}}]}`, nil,
			0, "", "database session is not available for semaphore ns/Database/template"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var cms []*corev1.ConfigMap
			if tc.configMap != nil {
				cms = append(cms, tc.configMap)
			}
			w := newLockWorld(t, cms...)
			wf := w.workflow(fmt.Sprintf(tmplLevelLock, tc.sync), w.now)
			w.pass(wf)
			w.pass(wf)
			if tc.wantError != "" {
				sg := wf.Status.Nodes[wf.NodeID("loop[0]")]
				if len(w.pods.created) != 0 || wf.Status.Phase != wfv1.WorkflowFailed || !strings.HasSuffix(sg.Message, "error: "+tc.wantError) {
					t.Fatalf("workflow %s, step group %q, %d pods; want Failed naming %q", wf.Status.Phase, sg.Message, len(w.pods.created), tc.wantError)
				}
				return
			}
			running, waiting := lockNodes(wf)
			if len(w.pods.created) != tc.wantRunning || len(running) != tc.wantRunning || len(waiting) != 3-tc.wantRunning {
				t.Fatalf("%d pods, %d running, %d waiting; want %d running", len(w.pods.created), len(running), len(waiting), tc.wantRunning)
			}
			for _, n := range waiting {
				if n.Message != tc.wantWaiting || n.Phase != wfv1.NodePending {
					t.Fatalf("a waiting node is %s %q, want Pending %q", n.Phase, n.Message, tc.wantWaiting)
				}
			}
			for range 6 {
				for id := range w.pods.created {
					w.done[id] = true
				}
				w.pass(wf)
			}
			if wf.Status.Phase != wfv1.WorkflowSucceeded || len(w.pods.created) != 3 || wf.Status.Synchronization != nil {
				t.Fatalf("workflow %s %q after %d pods, synchronization %+v; want all three run and Succeeded", wf.Status.Phase, wf.Status.Message,
					len(w.pods.created), wf.Status.Synchronization)
			}
		})
	}
}

// lockNodes splits the loop's children into those started and those waiting for a lock.
func lockNodes(wf *wfv1.Workflow) (running, waiting []wfv1.NodeStatus) {
	for _, n := range wf.Status.Nodes {
		if n.Type != wfv1.NodeTypePod {
			continue
		}
		if waitingForLock(&n) {
			waiting = append(waiting, n)
		} else {
			running = append(running, n)
		}
	}
	return running, waiting
}

// A workflow-level lock that cannot be set up fails the workflow at its start with argo's message.
func TestAWorkflowLevelLockThatCannotBeSetUpFailsTheWorkflow(t *testing.T) {
	for _, tc := range []struct {
		sentence, sync, want string
	}{
		{"a database mutex", `{mutexes: [{name: test, database: true}]}`,
			"Failed to acquire the synchronization lock. database session is not available for mutex ns/Database/test"},
		{"a semaphore whose ConfigMap is missing", `{semaphore: {configMapKeyRef: {name: my-config, key: workflow}}}`,
			"Failed to acquire the synchronization lock. failed to initialize semaphore ns/ConfigMap/my-config/workflow with limit"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			w := newLockWorld(t)
			wf := w.workflow(strings.Replace(fmt.Sprintf(wfLevelMutex, "wf", "44444444-4444-4444-4444-444444444444"),
				"{mutexes: [{name: test}]}", tc.sync, 1), w.now)
			w.pass(wf)
			if wf.Status.Phase != wfv1.WorkflowFailed || wf.Status.Message != tc.want || len(w.pods.created) != 0 {
				t.Fatalf("workflow %s %q with %d pods, want Failed %q", wf.Status.Phase, wf.Status.Message, len(w.pods.created), tc.want)
			}
		})
	}
}

// A node waiting for a lock ends as a pending node would when the workflow no longer lets it start: past
// its template's timeout it fails "timeout" (argo's check of Pending nodes), on a shutdown or past the
// workflow's deadline it ends as a new node would then — and it never gets a pod.
func TestANodeWaitingForALockEndsWhenTheWorkflowNoLongerLetsItStart(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		change   func(w *lockWorld, wf *wfv1.Workflow)
		want     string
	}{
		{"past its template's timeout it fails", func(w *lockWorld, _ *wfv1.Workflow) { w.now = w.now.Add(time.Minute) },
			"timeout"},
		{"a terminated workflow fails it", func(_ *lockWorld, wf *wfv1.Workflow) { wf.Spec.Shutdown = wfv1.ShutdownStrategyTerminate },
			"workflow shutdown with strategy: Terminate"},
		{"past the workflow's deadline it fails", func(w *lockWorld, wf *wfv1.Workflow) {
			wf.Spec.ActiveDeadlineSeconds = ptrTo(int64(30))
			w.now = w.now.Add(time.Minute)
		}, "Step exceeded its deadline"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			w := newLockWorld(t)
			wf := w.workflow(strings.Replace(fmt.Sprintf(tmplLevelLock, `{mutexes: [{name: welcome}]}`),
				"    container:", "    timeout: 30s\n    container:", 1), w.now)
			w.pass(wf)
			_, waiting := lockNodes(wf)
			if len(waiting) != 2 {
				t.Fatalf("%d nodes wait for the mutex, want 2", len(waiting))
			}
			tc.change(w, wf)
			w.pass(wf)
			for _, before := range waiting {
				n := wf.Status.Nodes[before.ID]
				if n.Phase != wfv1.NodeFailed || n.Message != tc.want || w.pods.created[n.ID] != nil || waitingForLock(&n) {
					t.Fatalf("a waiting node became %s %q (pod created: %v), want Failed %q without a pod", n.Phase, n.Message,
						w.pods.created[n.ID] != nil, tc.want)
				}
			}
		})
	}
}

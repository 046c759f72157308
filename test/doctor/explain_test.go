package doctor_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/explain"
	"github.com/wfguard/wfguard/inspect"
)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// t0 is a fixed time for the explain scenario, so its golden output does not depend on the clock.
var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

// everyWait builds a running workflow with one node per kind of wait.
func everyWait(e *env) *wfv1.Workflow {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	pod := func(name string, m int) node {
		return node{name: "[0]." + name, typ: wfv1.NodeTypePod, phase: wfv1.NodeRunning, template: "produce", synced: boolPtr(false), started: at(m)}
	}
	waiting := pod("produce", 1)
	waiting.waitingSince = at(9)
	done := pod("done", 1)
	done.phase, done.synced, done.finished, done.outputs = wfv1.NodeSucceeded, boolPtr(true), at(4), outParam("1")
	failed := pod("failed", 1)
	failed.phase, failed.finished, failed.message = wfv1.NodeFailed, at(5), "main: Error (exit code 1)"
	group := []string{"[0].produce", "[0].other", "[0].third", "[0].done", "[0].failed", "[0].unobserved"}
	wf := e.workflow("everywait", wfv1.WorkflowRunning, []node{
		{name: "", typ: wfv1.NodeTypeSteps, phase: wfv1.NodeRunning, template: "main", started: at(0), children: []string{"[0]"}},
		{name: "[0]", typ: wfv1.NodeTypeStepGroup, phase: wfv1.NodeRunning, started: at(0), children: group},
		waiting, pod("other", 1), pod("third", 2), done, failed, pod("unobserved", 1),
		{name: "[1]", typ: wfv1.NodeTypeStepGroup, phase: wfv1.NodeRunning, started: at(6), children: []string{"[1].approve"}},
		{name: "[1].approve", typ: wfv1.NodeTypeSuspend, phase: wfv1.NodeRunning, template: "approve", started: at(6)},
	}, func(wf *wfv1.Workflow) {
		wf.Status.StartedAt = metav1.NewTime(at(0))
		// [1] hangs off the root too, as argo links successive step groups.
		root := wf.NodeID(wf.Name)
		n := wf.Status.Nodes[root]
		n.Children = append(n.Children, wf.NodeID(wf.Name+"[1]"))
		wf.Status.Nodes[root] = n
	})
	e.pod(wf, "[0].produce", true, ended(corev1.PodSucceeded, at(9)))
	e.result(wf, "[0].produce", false, nil)
	e.pod(wf, "[0].other", true, running(at(1)))
	e.pod(wf, "[0].done", true, ended(corev1.PodSucceeded, at(4)))
	e.result(wf, "[0].done", true, outParam("1"))
	e.pod(wf, "[0].failed", true, ended(corev1.PodFailed, at(5)))
	e.result(wf, "[0].failed", false, outParam("partial"))
	e.pod(wf, "[0].unobserved", true, ended(corev1.PodSucceeded, at(3)))
	e.result(wf, "[0].unobserved", true, outParam("2"))
	e.action("resume-approve", wf.Name, actionsv1.ActionResume)
	return wf
}

// normalize replaces what the API server assigns (namespace, UIDs, creation times, last write) with
// fixed values, so the golden output depends only on what the test wrote.
func normalize(s *inspect.Snapshot) {
	fixed := metav1.NewTime(t0)
	wf := s.Workflow.WF
	s.Workflow.LastWrite = t0.Add(9 * time.Minute)
	uid := wf.UID
	wf.Namespace, wf.UID, wf.CreationTimestamp = "demo", "11111111-2222-3333-4444-555555555555", fixed
	for _, p := range s.Pods {
		p.CreationTimestamp = fixed
		for i := range p.OwnerReferences {
			if p.OwnerReferences[i].UID == uid {
				p.OwnerReferences[i].UID = wf.UID
			}
		}
	}
	for _, r := range s.Results {
		for i := range r.OwnerReferences {
			if r.OwnerReferences[i].UID == uid {
				r.OwnerReferences[i].UID = wf.UID
			}
		}
	}
	for _, a := range s.Actions {
		a.CreationTimestamp = metav1.NewTime(t0.Add(7 * time.Minute))
	}
}

func TestExplainNamesWhatEachNodeWaitsOnAndSinceWhen(t *testing.T) {
	e := newEnv(t, true)
	wf := everyWait(e)
	snap, err := inspect.ReadSnapshot(t.Context(), e.clients, e.ns, wf.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Skipped) > 0 {
		t.Fatalf("skipped: %v", snap.Skipped)
	}
	normalize(snap)
	tree := explain.Explain(snap, explain.Options{Now: t0.Add(10 * time.Minute)})

	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	wants := map[string]struct {
		on           string
		since, until time.Time
		result       string
	}{
		"everywait":  {explain.WaitChildren, at(0), time.Time{}, ""},
		"[0]":        {explain.WaitChildren, at(0), time.Time{}, ""},
		"produce":    {explain.WaitTaskResult, at(9), at(11), explain.ResultPlaceholder},
		"other":      {explain.WaitPod, at(1), time.Time{}, explain.ResultNone},
		"third":      {explain.WaitPodCreation, at(2), time.Time{}, explain.ResultNone},
		"done":       {explain.WaitFinalizerRelease, at(4), time.Time{}, explain.ResultComplete},
		"failed":     {explain.WaitTaskResult, at(5), at(7), explain.ResultIncomplete},
		"unobserved": {explain.WaitPodObservation, at(3), time.Time{}, explain.ResultComplete},
		"[1]":        {explain.WaitChildren, at(6), time.Time{}, ""},
		"approve":    {explain.WaitResume, at(6), time.Time{}, ""},
	}
	if len(tree.Nodes) != len(wants) {
		t.Errorf("%d nodes, want %d", len(tree.Nodes), len(wants))
	}
	for _, n := range tree.Nodes {
		w, ok := wants[n.DisplayName]
		if !ok {
			t.Errorf("unexpected node %s", n.DisplayName)
			continue
		}
		if n.Wait == nil || n.Wait.On != w.on || !n.Wait.Since.Equal(w.since) || !n.Wait.Until.Equal(w.until) || n.Result != w.result {
			t.Errorf("%s: wait %+v result %q; want %s since %s until %s, result %q", n.DisplayName, n.Wait, n.Result, w.on, w.since, w.until, w.result)
		}
	}
	if len(tree.Actions) != 1 || tree.Actions[0].Name != "resume-approve" {
		t.Errorf("pending actions %+v", tree.Actions)
	}

	var human bytes.Buffer
	if err := explain.WriteHuman(&human, tree); err != nil {
		t.Fatal(err)
	}
	golden(t, "explain-everywait.golden", human.Bytes())

	var out bytes.Buffer
	if err := explain.WriteJSON(&out, tree); err != nil {
		t.Fatal(err)
	}
	var back explain.Tree
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("the JSON does not decode: %v", err)
	}
	if len(back.Nodes) != len(tree.Nodes) || back.Nodes[2].Wait.On != explain.WaitTaskResult || !strings.Contains(out.String(), `"on": "task-result"`) {
		t.Errorf("JSON round trip lost the waits:\n%s", out.String())
	}
}

func TestExplainOfAMissingWorkflowSaysSo(t *testing.T) {
	e := newEnv(t, true)
	_, err := inspect.ReadSnapshot(t.Context(), e.clients, e.ns, "absent")
	if err == nil || err.Error() != "workflow "+e.ns+"/absent not found" {
		t.Errorf("err = %v", err)
	}
}

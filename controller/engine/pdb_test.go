package engine

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// fakePDBs records the budgets created and deleted.
type fakePDBs struct {
	created              []*policyv1.PodDisruptionBudget
	deleted              []string
	createErr, deleteErr error
}

func (f *fakePDBs) CreatePDB(_ context.Context, pdb *policyv1.PodDisruptionBudget) error {
	if f.createErr != nil {
		return f.createErr
	}
	f.created = append(f.created, pdb)
	return nil
}

func (f *fakePDBs) DeletePDB(_ context.Context, namespace, name string) error {
	if f.deleteErr != nil {
		return f.deleteErr
	}
	f.deleted = append(f.deleted, namespace+"/"+name)
	return nil
}

const pdbWorkflow = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  podDisruptionBudget: {minAvailable: 9999}
  templates:
  - {name: main, container: {image: alpine, command: [echo]}}
`

func TestThePodDisruptionBudgetLivesFromTheWorkflowsStartToItsCompletion(t *testing.T) {
	for _, tc := range []struct {
		sentence    string
		pdbs        *fakePDBs
		wantPhase   wfv1.WorkflowPhase
		wantMessage string
		wantCreated bool
		wantDeleted bool
		wantPods    bool
	}{
		{"argo's budget selects the workflow's pods and goes when the workflow succeeds",
			&fakePDBs{}, wfv1.WorkflowSucceeded, "", true, true, true},
		{"a budget that cannot be deleted errors the completed workflow with the error, as argo does",
			&fakePDBs{deleteErr: errors.New("boom")}, wfv1.WorkflowError, "boom", true, false, true},
		{"a budget the API server refuses errors the workflow before any pod",
			&fakePDBs{createErr: errors.New("minAvailable and maxUnavailable cannot both be set")}, wfv1.WorkflowError,
			"PDB creation failed: minAvailable and maxUnavailable cannot both be set", false, false, false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, pods := runToEnd(t, &Engine{PDBs: tc.pdbs}, pdbWorkflow, corev1.PodSucceeded)
			if wf.Status.Phase != tc.wantPhase || wf.Status.Message != tc.wantMessage {
				t.Errorf("workflow %s %q, want %s %q", wf.Status.Phase, wf.Status.Message, tc.wantPhase, tc.wantMessage)
			}
			if created := len(tc.pdbs.created) == 1; created != tc.wantCreated {
				t.Fatalf("created %d budgets, want created=%v", len(tc.pdbs.created), tc.wantCreated)
			}
			if tc.wantCreated {
				checkBudget(t, wf, tc.pdbs.created[0])
			}
			if deleted := len(tc.pdbs.deleted) == 1 && tc.pdbs.deleted[0] == "ns/wf"; deleted != tc.wantDeleted {
				t.Errorf("deleted %v, want deleted=%v", tc.pdbs.deleted, tc.wantDeleted)
			}
			if (len(pods.created) > 0) != tc.wantPods {
				t.Errorf("pods created %v, want any=%v", pods.order, tc.wantPods)
			}
		})
	}
}

// checkBudget asserts argo's budget: named after the workflow, labelled with it, owned by it, selecting its pods.
func checkBudget(t *testing.T, wf *wfv1.Workflow, pdb *policyv1.PodDisruptionBudget) {
	t.Helper()
	if pdb.Name != "wf" || pdb.Namespace != "ns" || pdb.Labels[common.LabelKeyWorkflow] != "wf" {
		t.Errorf("budget %s/%s labels %v", pdb.Namespace, pdb.Name, pdb.Labels)
	}
	if sel := pdb.Spec.Selector; sel == nil || len(sel.MatchLabels) != 1 || sel.MatchLabels[common.LabelKeyWorkflow] != "wf" {
		t.Errorf("budget selector %+v, want the workflow label", pdb.Spec.Selector)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 9999 {
		t.Errorf("budget minAvailable %v, want 9999", pdb.Spec.MinAvailable)
	}
	owner := pdb.OwnerReferences
	if len(owner) != 1 || owner[0].UID != wf.UID || owner[0].Kind != "Workflow" || owner[0].Controller == nil || !*owner[0].Controller {
		t.Errorf("budget owner references %+v, want the workflow as controller", owner)
	}
}

func TestTheBudgetsSelectorIsTheSpecsOrElseTheWorkflowsPods(t *testing.T) {
	for _, tc := range []struct {
		sentence, budget string
		want             map[string]string
	}{
		{"no selector selects the workflow's pods", `{minAvailable: 1}`, map[string]string{common.LabelKeyWorkflow: "wf"}},
		{"the spec's own selector is kept as given", `{maxUnavailable: 0, selector: {matchLabels: {app: x}}}`, map[string]string{"app": "x"}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			manifest := strings.Replace(pdbWorkflow, "{minAvailable: 9999}", tc.budget, 1)
			pdbs := &fakePDBs{}
			runToEnd(t, &Engine{PDBs: pdbs}, manifest, corev1.PodSucceeded)
			if len(pdbs.created) != 1 {
				t.Fatalf("created %d budgets, want 1", len(pdbs.created))
			}
			if got := pdbs.created[0].Spec.Selector.MatchLabels; !maps.Equal(got, tc.want) {
				t.Errorf("selector %v, want %v", got, tc.want)
			}
		})
	}
}

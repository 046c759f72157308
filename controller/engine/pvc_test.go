package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// fakePVCs records the claims created and deleted.
type fakePVCs struct {
	created   map[string]*corev1.PersistentVolumeClaim
	deleted   []string
	deleteErr error
}

func (f *fakePVCs) CreatePVC(_ context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if f.created == nil {
		f.created = map[string]*corev1.PersistentVolumeClaim{}
	}
	f.created[pvc.Name] = pvc
	return nil
}

func (f *fakePVCs) DeletePVC(_ context.Context, _, name string) error {
	if f.deleteErr != nil {
		return f.deleteErr
	}
	f.deleted = append(f.deleted, name)
	return nil
}

const pvcWorkflow = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  volumeClaimTemplates:
  - metadata: {name: workdir}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  templates:
  - name: main
    container:
      image: alpine
      command: [echo]
      volumeMounts: [{name: workdir, mountPath: /mnt/vol}]
`

func TestVolumeClaimTemplatesAreCreatedBeforeThePodsAndCollectedPerVolumeClaimGC(t *testing.T) {
	for _, tc := range []struct {
		sentence    string
		gc          string // spec.volumeClaimGC line
		podPhase    corev1.PodPhase
		deleteErr   error
		wantDeleted bool
		wantKept    bool // still in status.persistentVolumeClaims
	}{
		{"a succeeded workflow's claim is deleted by default (OnWorkflowSuccess)", "", corev1.PodSucceeded, nil, true, false},
		{"a failed workflow's claim is kept by default, for a retry", "", corev1.PodFailed, nil, false, true},
		{"OnWorkflowCompletion deletes a failed workflow's claim too", "  volumeClaimGC: {strategy: OnWorkflowCompletion}\n", corev1.PodFailed, nil, true, false},
		{"a claim that cannot be deleted stays in status and the workflow completes all the same", "", corev1.PodSucceeded, errors.New("boom"), false, true},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			pvcs := &fakePVCs{deleteErr: tc.deleteErr}
			manifest := strings.Replace(pvcWorkflow, "  entrypoint: main\n", "  entrypoint: main\n"+tc.gc, 1)
			wf, pods := runToEnd(t, &Engine{PVCs: pvcs}, manifest, tc.podPhase)
			if !wf.Status.Phase.Completed() {
				t.Fatalf("workflow did not complete: %s\n%s", wf.Status.Phase, nodeTree(wf))
			}
			pvc := pvcs.created["wf-workdir"]
			if pvc == nil {
				t.Fatalf("claim wf-workdir was not created: %v", pvcs.created)
			}
			owner := pvc.OwnerReferences
			if len(owner) != 1 || owner[0].UID != wf.UID || owner[0].Kind != "Workflow" || owner[0].Controller == nil || !*owner[0].Controller {
				t.Errorf("claim owner references %+v, want the workflow as controller", owner)
			}
			if pvc.Labels[common.LabelKeyWorkflow] != "wf" || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
				t.Errorf("claim labels %v, spec %+v", pvc.Labels, pvc.Spec)
			}
			pod := pods.created[wf.NodeID("wf")]
			if vol := findVolume(pod.Spec.Volumes, "workdir"); vol == nil || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != "wf-workdir" {
				t.Errorf("pod volumes %+v, want workdir from claim wf-workdir", pod.Spec.Volumes)
			}
			if deleted := len(pvcs.deleted) == 1 && pvcs.deleted[0] == "wf-workdir"; deleted != tc.wantDeleted {
				t.Errorf("deleted %v, want deleted=%v", pvcs.deleted, tc.wantDeleted)
			}
			if kept := len(wf.Status.PersistentVolumeClaims) == 1; kept != tc.wantKept {
				t.Errorf("status.persistentVolumeClaims %+v, want kept=%v", wf.Status.PersistentVolumeClaims, tc.wantKept)
			}
		})
	}
}

func TestAClaimThatCannotBeCreatedErrorsTheWorkflowBeforeAnyPod(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		manifest string
		engine   *Engine
		message  string
	}{
		{"a claim template without a name is argo's message",
			strings.Replace(pvcWorkflow, "metadata: {name: workdir}", "metadata: {}", 1), &Engine{PVCs: &fakePVCs{}},
			"pvc create error: volumeClaimTemplates[0].metadata.name is required"},
		{"no PVC client says so", pvcWorkflow, &Engine{}, "pvc create error: cannot create pvc wf-workdir: no PVC client is configured"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf, pods := runToEnd(t, tc.engine, tc.manifest, corev1.PodSucceeded)
			if wf.Status.Phase != wfv1.WorkflowError || wf.Status.Message != tc.message {
				t.Errorf("workflow %s %q, want Error %q", wf.Status.Phase, wf.Status.Message, tc.message)
			}
			if len(pods.created) != 0 {
				t.Errorf("pods were created: %v", pods.order)
			}
		})
	}
}

func findVolume(volumes []corev1.Volume, name string) *corev1.Volume {
	for i := range volumes {
		if volumes[i].Name == name {
			return &volumes[i]
		}
	}
	return nil
}

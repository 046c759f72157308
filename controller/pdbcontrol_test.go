package controller

import (
	"context"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

func budget(minAvailable int) *policyv1.PodDisruptionBudget {
	n := intstr.FromInt32(int32(minAvailable))
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &n}}
}

func TestTheWorkflowsBudgetIsCreatedOnceAndDeletedOnce(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		existing *policyv1.PodDisruptionBudget
		wantMin  int
	}{
		{"a free name is created", nil, 9999},
		{"a budget of that name already there is taken as it is, as argo takes it", budget(1), 1},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			if tc.existing != nil {
				kube = fake.NewClientset(tc.existing)
			}
			c := pdbControl{kube: kube}
			if err := c.CreatePDB(context.Background(), budget(9999)); err != nil {
				t.Fatalf("CreatePDB: %v", err)
			}
			got, err := kube.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), "wf", metav1.GetOptions{})
			if err != nil || got.Spec.MinAvailable.IntValue() != tc.wantMin {
				t.Fatalf("budget %+v (%v), want minAvailable %d", got, err, tc.wantMin)
			}
			for i := 0; i < 2; i++ { // the second delete finds it gone: success
				if err := c.DeletePDB(context.Background(), "ns", "wf"); err != nil {
					t.Fatalf("DeletePDB #%d: %v", i+1, err)
				}
			}
			if _, err := kube.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), "wf", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("budget still there: %v", err)
			}
		})
	}
}

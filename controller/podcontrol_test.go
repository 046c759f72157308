package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/controller/podspec"
)

func TestCreatingAPodWhoseNameAnotherWorkflowHoldsIsAWaitNotAnError(t *testing.T) {
	// pod is the controller's pod for node again-1 of workflow again with uid.
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "again-work-1",
			Labels:          map[string]string{podspec.LabelWorkflowUID: uid, common.LabelKeyWorkflow: "again"},
			Annotations:     map[string]string{common.AnnotationKeyNodeID: "again-1"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Workflow", Name: "again", UID: types.UID(uid)}}}}
	}
	lookAlike := pod("new")
	lookAlike.OwnerReferences = nil
	for _, tc := range []struct {
		sentence string
		existing *corev1.Pod
		want     string // the owner UID of a PodNameTakenError; "" = success
	}{
		{"a free name is created", nil, ""},
		{"our own pod (an unpersisted create) is success", pod("new"), ""},
		{"a pod of an earlier same-named workflow is PodNameTakenError naming its UID", pod("old"), "old"},
		{"a look-alike with our UID label but no owner is a taken name, not ours", lookAlike, "new"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			if tc.existing != nil {
				if _, err := kube.CoreV1().Pods("ns").Create(context.Background(), tc.existing, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			m, err := newMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			err = (&podControl{kube: kube, metrics: m}).CreatePod(context.Background(), pod("new"))
			var taken *engine.PodNameTakenError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tc.want != "" && (!errors.As(err, &taken) || taken.OwnerUID != tc.want || taken.Name != "again-work-1"):
				t.Fatalf("err = %v, want PodNameTakenError for UID %s", err, tc.want)
			}
		})
	}
}

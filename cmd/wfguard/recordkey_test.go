package main

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wfguard/wfguard/controller/engine"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
	"github.com/wfguard/wfguard/test/harness"
)

// Found reviewing issue #44's fixes: in a namespaced install the record key Secret lives in the namespace
// the workflows run in, and the kubelet mounts a Secret of the pod's namespace whoever submitted the pod. A
// user who may only create workflows could read the key and forge every seal. No workflow pod may read it.
func TestAWorkflowInTheControllersNamespaceCannotReadTheRecordKey(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "keyns")
	if err != nil {
		t.Fatal(err)
	}
	harness.StartNode(t, cp.Config(), simnode.Options{Namespace: ns})
	startController(t, "record-key", ns) // NAMESPACE is ns: the key Secret is created there
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	waitUntil(t, "the controller created its record key", 60*time.Second, func() bool {
		_, err := kube.CoreV1().Secrets(ns).Get(t.Context(), provenance.DefaultSecretName, metav1.GetOptions{})
		return err == nil
	})
	mallory := versioned.NewForConfigOrDie(harness.Grant(t, cp.Config(), ns, "mallory",
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"create", "get"}}))
	wf, err := mallory.ArgoprojV1alpha1().Workflows(ns).Create(t.Context(), &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "steal-key"},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main",
			Volumes: []corev1.Volume{{Name: "key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: provenance.DefaultSecretName}}}},
			Templates: []wfv1.Template{{Name: "main", Container: &corev1.Container{Image: "busybox", Command: []string{"cat", "/key/key"},
				VolumeMounts: []corev1.VolumeMount{{Name: "key", MountPath: "/key"}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	argo := versioned.NewForConfigOrDie(cp.Config())
	var done *wfv1.Workflow
	waitUntil(t, "the workflow completed", 60*time.Second, func() bool {
		got, err := argo.ArgoprojV1alpha1().Workflows(ns).Get(t.Context(), wf.Name, metav1.GetOptions{})
		done = got
		return err == nil && got.Status.Phase.Completed()
	})
	node := done.Status.Nodes[done.NodeID(wf.Name)]
	if done.Status.Phase == wfv1.WorkflowSucceeded || !strings.HasPrefix(node.Message, engine.RecordKeyRefusedPrefix) {
		t.Errorf("workflow %s, node %s %q: want the pod refused for reading the record key", done.Status.Phase, node.Phase, node.Message)
	}
	pods, err := kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + wf.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		t.Errorf("pod %s was created: it mounts the record key", pods.Items[0].Name)
	}
}

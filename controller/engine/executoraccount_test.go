package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wfguard/wfguard/extstatus"
)

// fakeServiceAccounts holds ServiceAccounts by namespace/name and records every read.
type fakeServiceAccounts struct {
	accounts map[string]*corev1.ServiceAccount
	err      error // returned by every read when set
	reads    []string
}

func (f *fakeServiceAccounts) ServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	f.reads = append(f.reads, namespace+"/"+name)
	if f.err != nil {
		return nil, f.err
	}
	if sa, ok := f.accounts[namespace+"/"+name]; ok {
		return sa.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

// twoExecutorPods is a workflow whose two steps run argoexec as an executor ServiceAccount, the pods' own
// token turned off: argo's documented hardening.
const twoExecutorPods = `
metadata: {name: hardened, namespace: team-a, uid: 44444444-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  automountServiceAccountToken: false
  executor: {serviceAccountName: %s}
  templates:
  - name: main
    steps: [[{name: a, template: work}, {name: b, template: work}]]
  - {name: work, container: {image: alpine, command: ["true"]}}
`

func TestTheExecutorAccountsTokenSecretIsFoundInTheWorkflowsNamespace(t *testing.T) {
	account := func(namespace, name string, modify func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		modify(sa)
		return sa
	}
	accounts := map[string]*corev1.ServiceAccount{
		"team-a/plain": account("team-a", "plain", func(*corev1.ServiceAccount) {}),
		"team-a/legacy": account("team-a", "legacy", func(sa *corev1.ServiceAccount) {
			sa.Secrets = []corev1.ObjectReference{{Name: "legacy-token-x7k2p"}, {Name: "other"}}
		}),
		"team-a/annotated": account("team-a", "annotated", func(sa *corev1.ServiceAccount) {
			sa.Annotations = map[string]string{common.AnnotationKeyServiceAccountTokenName: "chosen-token"}
		}),
		"team-b/elsewhere": account("team-b", "elsewhere", func(*corev1.ServiceAccount) {}),
	}
	for _, tc := range []struct {
		sentence    string
		account     string
		err         error // every read fails with it
		wantSecret  string
		wantMessage string // both nodes Error with it; "" means both pods are created
	}{
		{"an account without secrets has argo's <account>.service-account-token (created by an administrator on Kubernetes >= 1.24)",
			"plain", nil, "plain.service-account-token", ""},
		{"an account that lists secrets has its first one", "legacy", nil, "legacy-token-x7k2p", ""},
		{"an account annotated with its token's Secret has that one", "annotated", nil, "chosen-token", ""},
		{"a missing account errors the nodes with argo's message", "ghost", nil, "", `serviceaccounts "ghost" not found`},
		{"an account of another namespace is never read: it is missing here", "elsewhere", nil, "", `serviceaccounts "elsewhere" not found`},
		{"an account the controller may not read errors the nodes saying so", "plain",
			apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "plain", errors.New("RBAC")), "",
			`reading the executor ServiceAccount team-a/plain: serviceaccounts "plain" is forbidden: RBAC`},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			wf := &wfv1.Workflow{}
			if err := yaml.UnmarshalStrict([]byte(strings.Replace(twoExecutorPods, "%s", tc.account, 1)), wf); err != nil {
				t.Fatal(err)
			}
			source := &fakeServiceAccounts{accounts: accounts, err: tc.err}
			pods := &recordingPods{created: map[string]*corev1.Pod{}}
			runPass(t, &Engine{Pods: pods, ServiceAccounts: source}, wf, time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			if want := []string{"team-a/" + tc.account}; !slices.Equal(source.reads, want) {
				t.Errorf("reads %v, want %v: one read a pass, in the workflow's namespace", source.reads, want)
			}
			if tc.wantMessage != "" {
				// As argo, the step group errors with its first child and starts none of the others.
				if n := wf.Status.Nodes.FindByName("hardened[0].a"); n == nil || n.Phase != wfv1.NodeError || n.Message != tc.wantMessage {
					t.Errorf("node hardened[0].a = %+v, want Error %q", n, tc.wantMessage)
				}
				if len(pods.created) != 0 {
					t.Errorf("%d pods created, want none", len(pods.created))
				}
				return
			}
			if len(pods.created) != 2 {
				t.Fatalf("%d pods created, want 2", len(pods.created))
			}
			for _, pod := range pods.created {
				i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == common.ServiceAccountTokenVolumeName })
				if i < 0 || pod.Spec.Volumes[i].Secret == nil || pod.Spec.Volumes[i].Secret.SecretName != tc.wantSecret {
					t.Errorf("pod %s volumes %+v, want %s from Secret %s", pod.Name, pod.Spec.Volumes, common.ServiceAccountTokenVolumeName, tc.wantSecret)
				}
				if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
					t.Errorf("pod %s automountServiceAccountToken %v, want false", pod.Name, a)
				}
			}
		})
	}
}

func TestAnExecutorAccountThatCannotBeReadNowIsReadAgainByTheNextPass(t *testing.T) {
	wf := &wfv1.Workflow{}
	if err := yaml.UnmarshalStrict([]byte(strings.Replace(twoExecutorPods, "%s", "plain", 1)), wf); err != nil {
		t.Fatal(err)
	}
	source := &fakeServiceAccounts{err: apierrors.NewServiceUnavailable("etcd is down"),
		accounts: map[string]*corev1.ServiceAccount{"team-a/plain": {ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "plain"}}}}
	pods := &recordingPods{created: map[string]*corev1.Pod{}}
	e := &Engine{Pods: pods, ServiceAccounts: source}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	p := &Pass{WF: wf, Ext: &extstatus.Extensions{}, Now: now, Pods: map[string]*corev1.Pod{}, TaskResultTimeout: time.Hour}
	if started, err := e.Start(p); !started || err != nil {
		t.Fatalf("start: %v %v", started, err)
	}
	err := e.Execute(context.Background(), p)
	if !isAPIError(err) {
		t.Fatalf("execute error %v, want an API error the pass is retried for", err)
	}
	for _, step := range []string{"hardened[0].a", "hardened[0].b"} {
		if n := wf.Status.Nodes.FindByName(step); n != nil && n.Phase == wfv1.NodeError {
			t.Errorf("node %s errored on a transient read: %q", step, n.Message)
		}
	}
	if len(pods.created) != 0 {
		t.Errorf("%d pods created without the account's token", len(pods.created))
	}
	source.err = nil
	runPass(t, e, wf, now.Add(time.Second))
	if len(pods.created) != 2 {
		t.Errorf("%d pods created once the account could be read, want 2\n%v", len(pods.created), wf.Status.Nodes)
	}
}

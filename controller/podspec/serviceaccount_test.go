package podspec

import (
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestTheExecutorAccountsTokenReachesOnlyArgoexec(t *testing.T) {
	for _, tc := range []struct {
		sentence      string
		input         func() Input
		modify        func(in *Input)
		wantAccount   string
		wantAutomount *bool
		withToken     []string // containers that mount the token, init containers first
	}{
		{"the workflow's executor account is argoexec's in init and wait; the pod's token stays on unless turned off",
			containerInput, func(in *Input) { in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"} },
			"wf-exec", nil, []string{"init", "wait"}},
		{"the template's executor account wins over the workflow's",
			containerInput, func(in *Input) {
				in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"}
				in.Template.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "tmpl-exec"}
			},
			"tmpl-exec", nil, []string{"init", "wait"}},
		{"the template's automountServiceAccountToken of true wins over the workflow's false",
			containerInput, func(in *Input) {
				in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"}
				in.Workflow.Spec.AutomountServiceAccountToken = ptr.To(false)
				in.Template.AutomountServiceAccountToken = ptr.To(true)
			},
			"wf-exec", nil, []string{"init", "wait"}},
		{"the template's false turns the pod's token off",
			containerInput, func(in *Input) {
				in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"}
				in.Template.AutomountServiceAccountToken = ptr.To(false)
			},
			"wf-exec", ptr.To(false), []string{"init", "wait"}},
		{"a data template's main runs argoexec: it mounts the token too",
			dataInput, func(in *Input) { in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"} },
			"wf-exec", nil, []string{"init", "main"}},
		{"a containerSet's containers are the user's: only init and wait mount the token",
			containerSetInput, func(in *Input) { in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"} },
			"wf-exec", nil, []string{"init", "wait"}},
		{"without an executor account no container mounts a token and the Secret given is ignored",
			containerInput, func(*Input) {}, "", nil, nil},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			in := tc.input()
			in.ExecutorTokenSecret = "the-token"
			tc.modify(&in)
			if got := ExecutorServiceAccount(in.Workflow, in.Template); got != tc.wantAccount {
				t.Errorf("executor account %q, want %q", got, tc.wantAccount)
			}
			pod, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Spec.AutomountServiceAccountToken; !equalBoolPtr(got, tc.wantAutomount) {
				t.Errorf("automountServiceAccountToken %v, want %v", got, tc.wantAutomount)
			}
			var mounting []string
			for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
				for _, m := range c.VolumeMounts {
					if m.Name == common.ServiceAccountTokenVolumeName {
						if m.MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m.ReadOnly {
							t.Errorf("container %s mounts the token at %s (read-only %v)", c.Name, m.MountPath, m.ReadOnly)
						}
						mounting = append(mounting, c.Name)
					}
				}
			}
			if !slices.Equal(mounting, tc.withToken) {
				t.Errorf("containers mounting the token %v, want %v", mounting, tc.withToken)
			}
			i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == common.ServiceAccountTokenVolumeName })
			switch {
			case tc.wantAccount == "" && i >= 0:
				t.Errorf("volume %s present without an executor account", common.ServiceAccountTokenVolumeName)
			case tc.wantAccount != "" && (i < 0 || pod.Spec.Volumes[i].Secret == nil || pod.Spec.Volumes[i].Secret.SecretName != "the-token"):
				t.Errorf("volumes %+v, want %s from Secret the-token", pod.Spec.Volumes, common.ServiceAccountTokenVolumeName)
			}
		})
	}
}

func equalBoolPtr(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func TestThePodRecordsItsExecutorAccountWhereNobodyCanChangeIt(t *testing.T) {
	withAccount := func(in *Input) { in.Workflow.Spec.Executor = &wfv1.ExecutorConfig{ServiceAccountName: "wf-exec"} }
	for _, tc := range []struct {
		sentence string
		input    func() Input
		modify   func(in *Input)
		edit     func(pod *corev1.Pod)
		want     string
	}{
		{"a pod built with an executor account records it in every argoexec container", containerInput, withAccount, nil, "wf-exec"},
		{"a resource pod's argoexec main records it too", resourceCreateInput, withAccount, nil, "wf-exec"},
		{"a pod without an executor account records none", containerInput, func(*Input) {}, nil, ""},
		{"a pod without the token volume has no executor account, whatever its env says", containerInput, withAccount,
			func(pod *corev1.Pod) {
				pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == common.ServiceAccountTokenVolumeName })
			}, ""},
		{"a container that contradicts the record (a submitter's own env) leaves the pod with none", containerInput, withAccount,
			func(pod *corev1.Pod) {
				i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == common.MainContainerName })
				pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, corev1.EnvVar{Name: EnvExecutorServiceAccount, Value: "other"})
			}, ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			in := tc.input()
			in.ExecutorTokenSecret = "the-token"
			tc.modify(&in)
			pod, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(pod)
			}
			if got := ExecutorServiceAccountOf(pod); got != tc.want {
				t.Errorf("ExecutorServiceAccountOf = %q, want %q", got, tc.want)
			}
		})
	}
}

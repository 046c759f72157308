package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestAPodThatWouldReadTheRecordKeyIsRefused(t *testing.T) {
	key := types.NamespacedName{Namespace: "argo", Name: "wfguard-record-key"}
	pod := func(ns string, change func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "wait"}, {Name: "main"}}}}
		change(&p.Spec)
		return p
	}
	secretVolume := func(name string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
		}
	}
	for _, tc := range []struct {
		sentence string
		key      types.NamespacedName
		pod      *corev1.Pod
		refused  bool
	}{
		{"a secret volume of the key is refused", key, pod("argo", secretVolume("wfguard-record-key")), true},
		{"a projected volume of the key is refused", key, pod("argo", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "wfguard-record-key"}}}}}}}}
		}), true},
		{"an environment variable from the key is refused", key, pod("argo", func(s *corev1.PodSpec) {
			s.Containers[1].Env = []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "wfguard-record-key"}, Key: "key"}}}}
		}), true},
		{"an init container's envFrom of the key is refused", key, pod("argo", func(s *corev1.PodSpec) {
			s.InitContainers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "wfguard-record-key"}}}}
		}), true},
		{"another Secret of the namespace is the workflow's business", key, pod("argo", secretVolume("my-credentials")), false},
		{"a Secret of that name in another namespace is not the key", key, pod("team-a", secretVolume("wfguard-record-key")), false},
		{"without a record key Secret nothing is refused", types.NamespacedName{}, pod("argo", secretVolume("wfguard-record-key")), false},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			if err := refuseRecordKey(tc.pod, tc.key); (err != nil) != tc.refused {
				t.Fatalf("refuseRecordKey = %v, want refused %v", err, tc.refused)
			}
		})
	}
}

package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestGlobalVariablesInSpecVolumesAndClaimTemplatesAreSubstitutedAsArgoDoes(t *testing.T) {
	const manifest = `metadata: {name: wf, namespace: ns, uid: 11111111-1111-1111-1111-111111111111}
spec:
  entrypoint: main
  arguments: {parameters: [{name: cm, value: settings}, {name: class, value: fast}]}
  volumes:
  - {name: config, configMap: {name: "{{workflow.parameters.cm}}"}}
  - {name: later, configMap: {name: "{{workflow.status}}-{{nosuch.variable}}"}}
  volumeClaimTemplates:
  - metadata: {name: work, labels: {for: "{{workflow.name}}"}}
    spec: {storageClassName: "{{workflow.parameters.class}}", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  templates:
  - name: main
    container:
      image: alpine
      command: [echo]
      volumeMounts: [{name: config, mountPath: /c}, {name: later, mountPath: /l}, {name: work, mountPath: /w}]
`
	pvcs := &fakePVCs{}
	wf, pods := runToEnd(t, &Engine{PVCs: pvcs}, manifest, corev1.PodSucceeded)
	if wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("workflow %s (%s), want Succeeded", wf.Status.Phase, wf.Status.Message)
	}
	pod := pods.created[wf.NodeID("wf")]
	volume := func(name string) string {
		for _, v := range pod.Spec.Volumes {
			if v.Name == name && v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
		}
		return "<none>"
	}
	for _, tc := range []struct{ sentence, volume, want string }{
		{"a workflow parameter in a volume is its value", "config", "settings"},
		{"a variable argo sets only after the spec is substituted, and an unknown one, stay as written", "later", "{{workflow.status}}-{{nosuch.variable}}"},
	} {
		if got := volume(tc.volume); got != tc.want {
			t.Errorf("%s: volume %s names ConfigMap %q, want %q", tc.sentence, tc.volume, got, tc.want)
		}
	}
	claim := pvcs.created["wf-work"]
	if claim == nil {
		t.Fatalf("claims created: %v, want wf-work", pvcs.created)
	}
	if got := *claim.Spec.StorageClassName; got != "fast" {
		t.Errorf("a workflow parameter in a claim template: storage class %q, want fast", got)
	}
	if got := claim.Labels["for"]; got != "wf" {
		t.Errorf("{{workflow.name}} in a claim template's labels: %q, want wf", got)
	}
	written, _ := yaml.Marshal(wf.Spec.Volumes)
	if !strings.Contains(string(written), "{{workflow.parameters.cm}}") {
		t.Errorf("the persisted spec.volumes lost what the user wrote:\n%s", written)
	}
}

package controllerconfig

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "argo", Name: DefaultName}, Data: data}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     map[string]string
		wantErr  string
		wantPar  int
		wantTol  int
		wantKeys string
	}{
		{name: "the whole config under the key config is read", data: map[string]string{"config": "parallelism: 3\nworkflowDefaults:\n  spec:\n    tolerations:\n    - key: pool\n      operator: Exists\n"},
			wantPar: 3, wantTol: 1, wantKeys: "parallelism,workflowDefaults"},
		{name: "top-level keys are read as fields, single-line values as scalars", data: map[string]string{"parallelism": "4", "namespaceParallelism": "2"},
			wantPar: 4, wantKeys: "namespaceParallelism,parallelism"},
		{name: "a multi-line top-level value is read as a block", data: map[string]string{"workflowDefaults": "spec:\n  tolerations:\n  - key: pool\n    operator: Exists\n"},
			wantTol: 1, wantKeys: "workflowDefaults"},
		{name: "config beside another key is refused as argo refuses it", data: map[string]string{"config": "parallelism: 3", "parallelism": "4"},
			wantErr: `the key "config" must be the only key`},
		{name: "an unknown field is refused naming it (argo parses strictly)", data: map[string]string{"config": "paralelism: 3\n"},
			wantErr: `unknown field "paralelism"`},
		{name: "a value of the wrong type is refused", data: map[string]string{"parallelism": "many"},
			wantErr: "parsing ConfigMap argo/workflow-controller-configmap"},
		{name: "an empty ConfigMap is the default config", data: nil, wantKeys: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(configMap(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Parallelism != tc.wantPar {
				t.Errorf("parallelism = %d, want %d", cfg.Parallelism, tc.wantPar)
			}
			tol := 0
			if cfg.WorkflowDefaults != nil {
				tol = len(cfg.WorkflowDefaults.Spec.Tolerations)
			}
			if tol != tc.wantTol {
				t.Errorf("default tolerations = %d, want %d", tol, tc.wantTol)
			}
			keys, err := SetKeys(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(keys, ","); got != tc.wantKeys {
				t.Errorf("set keys = %q, want %q", got, tc.wantKeys)
			}
		})
	}
}

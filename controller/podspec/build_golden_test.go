package podspec

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the pods Build returns now")

// TestBuildMatchesGoldenPods pins whole pods, because argoexec depends on
// details (env names and order, mount paths, the command prefix) that are
// easy to break without any other test noticing.
func TestBuildMatchesGoldenPods(t *testing.T) {
	tests := []struct {
		name   string
		golden string
		input  Input
	}{
		{"a container template gets init, wait and an emissary-wrapped main", "container", containerInput()},
		{"a script template stages its source and runs it from the staging volume", "script", scriptInput()},
		{"an exit handler pod carries metadata, instance ID, finalizer, deadline and pod GC strategy", "full", fullInput()},
		{"a template with artifacts, init containers, sidecars and a podSpecPatch gets their volumes and env", "artifacts", artifactsInput()},
		{"a containerSet runs each of its containers beside wait, each wrapped by the emissary with the set's mounts", "container-set", containerSetInput()},
		{"a resource create with setOwnerReference runs argoexec resource as main, owner added to the manifest, no wait", "resource-create", resourceCreateInput()},
		{"a resource patch with mergeStrategy and flags names its own pod through {{pod.name}}", "resource-patch", resourcePatchInput()},
		{"a resource apply with manifestFrom mounts the downloaded manifest into main and archives logs with a wait container", "resource-manifest-from", resourceManifestFromInput()},
		{"a configured executor's pull policy, resources, securityContext, args and env reach init and wait; mainContainer defaults merge under main", "configured-executor", configuredExecutorInput()},
		{"a data template runs argoexec data as an emissary-wrapped main with the source's credentials, no wait", "data", dataInput()},
		{"an executor ServiceAccount's token Secret is mounted where argoexec reads credentials in init and wait only, the pod's own token off", "executor-account", executorAccountInput()},
		{"a template's executor ServiceAccount reaches a resource pod's argoexec main as well", "executor-account-resource", executorAccountResourceInput()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := Build(tt.input)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			got, err := yaml.Marshal(pod)
			if err != nil {
				t.Fatalf("marshalling pod: %v", err)
			}
			path := filepath.Join("testdata", tt.golden+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatalf("updating golden file: %v", err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("pod differs from %s (run `go test ./controller/podspec/ -update` if the change is intended)\n--- got ---\n%s", path, got)
			}
		})
	}
}

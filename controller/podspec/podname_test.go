package podspec

import (
	"strings"
	"testing"
)

func TestPodName(t *testing.T) {
	long := strings.Repeat("w", 200)
	tests := []struct {
		name                                   string
		workflow, node, template, nodeID, want string
	}{
		{
			name:     "a node named like its workflow gets the workflow name",
			workflow: "wf-abc", node: "wf-abc", template: "main", nodeID: "wf-abc",
			want: "wf-abc",
		},
		{
			name:     "a step node gets workflow name, template name and the decimal fnv32a hash of the node name",
			workflow: "wf-abc", node: "wf-abc.a", template: "hello", nodeID: "wf-abc-3117804908",
			want: "wf-abc-hello-3117804908",
		},
		{
			name:     "a node without a template name gets only the workflow name before the hash",
			workflow: "wf-abc", node: "wf-abc[0].hello", template: "", nodeID: "x",
			want: "wf-abc-3797448615",
		},
		{
			name:     "the node ID does not change a v2 pod name",
			workflow: "wf-abc", node: "wf-abc.a", template: "hello", nodeID: "something-else",
			want: "wf-abc-hello-3117804908",
		},
		{
			name:     "a long prefix is truncated to 242 characters before the hash",
			workflow: long, node: "wf-abc.a", template: strings.Repeat("t", 100), nodeID: "x",
			want: (long + "-" + strings.Repeat("t", 100))[:242] + "-3117804908",
		},
		{
			name:     "a prefix of exactly 242 characters is kept whole",
			workflow: strings.Repeat("w", 242), node: "wf-abc.a", template: "", nodeID: "x",
			want: strings.Repeat("w", 242) + "-3117804908",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodName(tt.workflow, tt.node, tt.template, tt.nodeID)
			if got != tt.want {
				t.Errorf("PodName(%q, %q, %q, %q)\n got: %s\nwant: %s", tt.workflow, tt.node, tt.template, tt.nodeID, got, tt.want)
			}
			if len(got) > 253 {
				t.Errorf("pod name is %d characters, over the 253 Kubernetes allows", len(got))
			}
		})
	}
}

package engine

import "testing"

func TestStdoutIsCapturedOnlyWhenTheCallerReadsTheResult(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		parent   string
		node     string
		want     bool
	}{
		{"the root template has no caller, so nothing reads its result", "", "wf", false},
		{"a step whose result a later step reads is captured", `{"steps":[[{"name":"gen"}],[{"arguments":"{{steps.gen.outputs.result}}"}]]}`, "wf[0].gen", true},
		{"a task whose result a later task reads is captured", `{"dag":{"tasks":[{"when":"{{tasks.gen.outputs.result}} == x"}]}}`, "wf.gen", true},
		{"a step nobody reads is not captured", `{"steps":[[{"name":"gen"}],[{"name":"other"}]]}`, "wf[0].gen", false},
		{"another step's reference does not count", `{"steps":[[{"arguments":"{{steps.gen-2.outputs.result}}"}]]}`, "wf[0].gen", false},
		{"a loop iteration is named by its step", `{"steps":[[{"arguments":"{{steps.gen.outputs.result}}"}]]}`, "wf[0].gen(1:a)", true},
		{"a retry attempt of a loop iteration is named by its step", `{"dag":"{{tasks.gen.outputs.result}}"}`, "wf.gen(0:a:1,b:x.y)(2)", true},
		{"an expression with single quotes counts", `{"expression":"steps['gen'].outputs.result"}`, "wf[0].gen", true},
		{"an expression with double quotes counts", `{"expression":"tasks[\"gen\"].outputs.result"}`, "wf.gen", true},
	} {
		if got := includeScriptOutput(tc.parent, tc.node); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.sentence, got, tc.want)
		}
	}
}

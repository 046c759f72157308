package engine

import "strings"

// includeScriptOutput reports whether argoexec must capture the main container's stdout as outputs.result
// (ARGO_INCLUDE_SCRIPT_OUTPUT) for node nodeName: only when its calling steps/DAG template (parentTmplJSON,
// "" at the root and for exit handlers) references that step's or task's outputs.result, as argo decides.
// A script template is no exception: nobody reading its result means no result is reported.
func includeScriptOutput(parentTmplJSON, nodeName string) bool {
	if parentTmplJSON == "" {
		return false
	}
	name := stepOrTaskName(nodeName)
	for _, scope := range []string{"steps", "tasks"} {
		refs := []string{
			scope + "." + name + ".outputs.result",
			// expression syntax; the template is JSON, so a double quote arrives escaped
			scope + "['" + name + "'].outputs.result",
			scope + `[\"` + name + `\"].outputs.result`,
		}
		for _, ref := range refs {
			if strings.Contains(parentTmplJSON, ref) {
				return true
			}
		}
	}
	return false
}

// stepOrTaskName is the step or task name a node was started by: its name after the last dot, without the
// trailing "(…)" and "[…]" groups loops and retries append (".fanout(0:1)(0)" is "fanout").
func stepOrTaskName(nodeName string) string {
	end := len(nodeName)
	for end > 0 {
		closer := nodeName[end-1]
		var opener byte
		switch closer {
		case ')':
			opener = '('
		case ']':
			opener = '['
		}
		if opener == 0 {
			break
		}
		open := strings.LastIndexByte(nodeName[:end-1], opener)
		if open < 0 {
			break
		}
		end = open
	}
	name := nodeName[:end]
	if dot := strings.LastIndexByte(name, '.'); dot >= 0 {
		name = name[dot+1:]
	}
	return name
}

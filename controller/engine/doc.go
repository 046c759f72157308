// Package engine runs argo templates (container, script, suspend, steps, dag) over a workflow status.
package engine

// Package podidentity decides whether a pod is the one the controller created for a workflow's node.
// It is the one place that rule lives: the pod lister, the finalizer release, the orphan sweep and the
// task-result merge all ask it, so a pod (or a result claiming a pod) another identity wrote never decides
// a node it does not provably belong to (DESIGN.md invariant I9).
package podidentity

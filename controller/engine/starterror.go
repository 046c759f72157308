package engine

import (
	"errors"

	"github.com/wfguard/wfguard/controller/podspec"
)

// startError is a pod node that errored because its pod could not be built. The node records it; the
// error also goes to the caller because argo lets a step group or DAG task know at once: the group errors
// ("step group deemed errored due to child …") and starts none of its remaining steps, the task errors
// ("task '…' errored: …").
type startError struct{ err error }

func (e *startError) Error() string { return podBuildMessage(e.err) }
func (e *startError) Unwrap() error { return e.err }

// recordedOnNode drops a startError: for callers other than a step group or DAG (the entrypoint, the
// workflow's exit handler, a retry's attempt, a step's exit hook) the errored node says it all and decides
// as any errored node does.
func recordedOnNode(err error) error {
	if se := (*startError)(nil); errors.As(err, &se) {
		return nil
	}
	return err
}

// podBuildMessage is the node message for a pod that cannot be built: argo's words when it is a container
// without a command, whose image entrypoint cannot be looked up; the build error otherwise.
func podBuildMessage(err error) string {
	if ee := (*podspec.EntrypointError)(nil); errors.As(err, &ee) {
		return ee.Error()
	}
	return err.Error()
}

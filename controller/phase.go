package controller

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Phase names, also the values of wfguard_phase_duration_seconds' phase label: a phase's error is wrapped
// with its name and its logs carry it (passPhase).
const (
	PhaseRetryCleanup     = "retry_cleanup"
	PhaseDrainActions     = "drain_actions"
	PhaseFindMissingPods  = "find_missing_pods"
	PhaseMergeTaskResults = "merge_task_results"
	PhaseAssessPods       = "assess_pods"
	PhaseExecute          = "execute"
	PhaseApplyRetry       = "apply_retry"
	PhasePersist          = "persist"
	PhaseAfterPersist     = "after_persist"
	PhaseEffects          = "effects"
)

// phaseNames lists every phase, so each has its series from the start.
var phaseNames = []string{PhaseRetryCleanup, PhaseDrainActions, PhaseFindMissingPods, PhaseMergeTaskResults, PhaseAssessPods,
	PhaseExecute, PhaseApplyRetry, PhasePersist, PhaseAfterPersist, PhaseEffects}

// phase is one named step of a pass; status is the contract between phases.
type phase struct {
	name string
	run  func(context.Context, *pass) error
	// partial: a failure here still writes what the pass decided (the phases marked persists run), then
	// ends the pass with it. Any other failure ends the pass at once.
	partial bool
	// persists: part of the write path that runs after a partial failure too.
	persists bool
}

// phaseError is a phase's failure, named: the reconcile's error and its log say where the pass stopped.
type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

// failedPhase is the phase err came from ("" if none).
func failedPhase(err error) string {
	var pe *phaseError
	if errors.As(err, &pe) {
		return pe.phase
	}
	return ""
}

// runPhases runs a flow's phases in order, until one ends the pass (pass.end) or fails.
func (c *Controller) runPhases(ctx context.Context, p *pass, phases []phase) error {
	var partial error
	for _, ph := range phases {
		if p.ended || (partial != nil && !ph.persists) {
			break
		}
		err := c.runPhase(ctx, p, ph)
		switch {
		case err == nil:
		case partial != nil:
			return fmt.Errorf("%w (and writing the partial pass: %w)", partial, err)
		case ph.partial:
			partial = err
		default:
			return err
		}
	}
	return partial
}

// runPhase runs one phase with the pass's logger naming it, and times it.
func (c *Controller) runPhase(ctx context.Context, p *pass, ph phase) error {
	start := c.clock.Now()
	p.log = c.log.With("workflow", p.key, "passPhase", ph.name)
	err := ph.run(ctx, p)
	c.metrics.phaseDuration.WithLabelValues(ph.name).Observe(c.clock.Since(start).Seconds())
	if err != nil {
		return &phaseError{phase: ph.name, err: err}
	}
	return nil
}

// runFlow runs a flow's phases and says when the key is looked at again.
func (c *Controller) runFlow(ctx context.Context, p *pass, phases []phase) (time.Duration, error) {
	if err := c.runPhases(ctx, p, phases); err != nil {
		return 0, err
	}
	if p.ended {
		return p.endAfter, nil
	}
	return p.RequeueAfter(), nil
}

package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	argoerrors "github.com/argoproj/argo-workflows/v3/errors"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	argoerrs "github.com/argoproj/argo-workflows/v3/util/errors"
	"github.com/argoproj/argo-workflows/v3/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/argoproj/argo-workflows/v3/util/intstr"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
)

// retryStrategyOf is the template's retryStrategy, else the workflow's default one.
func retryStrategyOf(wf *wfv1.Workflow, t *wfv1.Template) *wfv1.RetryStrategy {
	if t.RetryStrategy != nil {
		return t.RetryStrategy
	}
	return wf.Spec.RetryStrategy
}

// checkRetryStrategy rejects a strategy that can never be applied, naming the field, before any attempt
// runs (argo finds some of these only after the first failure). An expression is checked only when it was
// written without parameters: one built from them (e.g. an upstream step's result) is, as in argo, only
// known to be bad when a failed attempt evaluates it, and never needs to be when the first attempt succeeds.
func checkRetryStrategy(s *wfv1.RetryStrategy, writtenExpr string) error {
	if _, err := retryLimit(s); err != nil {
		return err
	}
	switch s.RetryPolicy {
	case "", wfv1.RetryPolicyAlways, wfv1.RetryPolicyOnFailure, wfv1.RetryPolicyOnError, wfv1.RetryPolicyOnTransientError:
	default:
		return fmt.Errorf("retryStrategy.retryPolicy %q is not one of Always, OnFailure, OnError, OnTransientError", s.RetryPolicy)
	}
	if b := s.Backoff; b != nil {
		if b.Duration == "" {
			return fmt.Errorf("retryStrategy.backoff.duration is required")
		}
		for field, v := range map[string]string{"duration": b.Duration, "maxDuration": b.MaxDuration, "cap": b.Cap} {
			if v == "" {
				continue
			}
			if _, err := wfv1.ParseStringToDuration(v); err != nil {
				return fmt.Errorf("retryStrategy.backoff.%s %q is not a duration: %v", field, v, err)
			}
		}
		if _, err := intstr.Int32(b.Factor); err != nil {
			return fmt.Errorf("retryStrategy.backoff.factor: %v", err)
		}
	}
	if s.Expression != "" && !strings.Contains(writtenExpr, "{{") {
		// Compile against the variables an evaluation will have; only evaluation errors may remain.
		_, err := argoexpr.EvalBool(s.Expression, env.GetFuncMap(retryScope(nil)))
		if err != nil && !strings.HasPrefix(err.Error(), "unable to evaluate") && !strings.HasPrefix(err.Error(), "unable to cast") {
			return fmt.Errorf("retryStrategy.expression %q does not compile: %v", s.Expression, err)
		}
	}
	return nil
}

func retryLimit(s *wfv1.RetryStrategy) (*int32, error) {
	limit, err := intstr.Int32(s.Limit)
	if err != nil {
		return nil, fmt.Errorf("retryStrategy.limit: %v", err)
	}
	return limit, nil
}

// retryScope is what a retry expression sees: the attempt count and the last attempt's outcome.
func retryScope(attempts []*wfv1.NodeStatus) map[string]any {
	scope := map[string]any{
		common.LocalVarRetries:             "0",
		common.LocalVarRetriesLastExitCode: "-1",
		common.LocalVarRetriesLastStatus:   "",
		common.LocalVarRetriesLastDuration: "0",
		common.LocalVarRetriesLastMessage:  "",
	}
	if len(attempts) == 0 {
		return scope
	}
	last := attempts[len(attempts)-1]
	scope[common.LocalVarRetries] = strconv.Itoa(len(attempts) - 1)
	if last.Outputs != nil && last.Outputs.ExitCode != nil {
		scope[common.LocalVarRetriesLastExitCode] = *last.Outputs.ExitCode
	}
	scope[common.LocalVarRetriesLastStatus] = string(last.Phase)
	scope[common.LocalVarRetriesLastDuration] = fmt.Sprint(last.FinishedAt.Sub(last.StartedAt.Time).Seconds())
	scope[common.LocalVarRetriesLastMessage] = last.Message
	return scope
}

// attemptParams are the {{retries}} and {{lastRetry.*}} variables of attempt number num.
func attemptParams(num int, last *wfv1.NodeStatus) common.Parameters {
	params := common.Parameters{
		common.LocalVarRetries:             strconv.Itoa(num),
		common.LocalVarRetriesLastExitCode: "0",
		common.LocalVarRetriesLastDuration: "0",
		common.LocalVarRetriesLastStatus:   "",
		common.LocalVarRetriesLastMessage:  "",
	}
	if last != nil {
		if last.Outputs != nil && last.Outputs.ExitCode != nil {
			params[common.LocalVarRetriesLastExitCode] = *last.Outputs.ExitCode
		}
		params[common.LocalVarRetriesLastStatus] = string(last.Phase)
		params[common.LocalVarRetriesLastDuration] = fmt.Sprint(last.FinishedAt.Sub(last.StartedAt.Time).Seconds())
		params[common.LocalVarRetriesLastMessage] = last.Message
	}
	return params
}

// attemptsOf are a retry node's attempts, in order.
func attemptsOf(p *Pass, n *wfv1.NodeStatus) []*wfv1.NodeStatus {
	var out []*wfv1.NodeStatus
	for _, id := range n.Children {
		if c := p.nodeByID(id); c != nil && c.NodeFlag != nil && c.NodeFlag.Retried {
			out = append(out, c)
		}
	}
	return out
}

// maxAttemptsPerPass bounds attempts that fail at once (e.g. a pod that cannot be built) within one pass;
// the pass requeues itself for the rest.
const maxAttemptsPerPass = 5

// executeRetry runs the call's template with a retryStrategy: a Retry node whose children are the attempts
// name(0), name(1), ... A new attempt starts only when the previous one is fulfilled (terminal and its
// result synced) and the strategy allows it; the Retry node ends with the last attempt's phase and outputs.
func (e *Engine) executeRetry(ctx context.Context, c *nodeCall, strategy *wfv1.RetryStrategy) (*wfv1.NodeStatus, error) {
	p := c.p
	n := c.node()
	if n == nil {
		if failFastHolds(p, c.boundaryID) || parallelismReached(p, c.boundaryID) {
			return nil, nil
		}
		n = p.newNode(nodeAt{c.name, c.display, c.written.Name, c.boundaryID}, wfv1.NodeTypeRetry, wfv1.NodeRunning, "")
		n.Inputs = inputsOf(c.resolved)
		n.NodeFlag = c.opts.flag
		p.setNode(n)
		if err := checkRetryStrategy(strategy, c.opts.writtenRetryExpr); err != nil {
			return p.markPhase(n, wfv1.NodeError, err.Error()), nil
		}
	}
	for range maxAttemptsPerPass {
		if done, err := e.nextAttempt(ctx, c, strategy); done || err != nil {
			return c.node(), err
		}
	}
	p.requeueBy(p.Now)
	return c.node(), nil
}

// nextAttempt drives the Retry node of c one attempt on: it reports done when the node settled, its
// attempt goes on, or the strategy ends it; false when a new attempt was fulfilled at once (another may
// follow in the same pass).
func (e *Engine) nextAttempt(ctx context.Context, c *nodeCall, strategy *wfv1.RetryStrategy) (done bool, err error) {
	p := c.p
	n := c.node()
	if settled(n) || stoppingDaemon(n) {
		return true, nil // a stopped daemon's Retry node ends with its attempt (settleStoppedRetries)
	}
	attempts := attemptsOf(p, n)
	num := len(attempts)
	var last *wfv1.NodeStatus
	if num > 0 {
		last = attempts[num-1]
	}
	if followDaemonAttempt(p, n, last) {
		return true, nil
	}
	if last != nil && !fulfilled(last) {
		num-- // the current attempt goes on
		last = nil
		if num > 0 {
			last = attempts[num-1]
		}
	} else if last != nil && !e.retryAgain(p, n, strategy, attempts) {
		return true, nil
	}
	attempt := c.attempt(num, last)
	p.avoidFailedHosts(attempt.name, n, strategy)
	child, err := e.executeTemplate(ctx, attempt)
	if err = recordedOnNode(err); err != nil || child == nil {
		return true, err
	}
	p.addChild(c.node(), child.ID)
	return !p.nodeFulfilled(attempt.name), nil
}

// attempt is the call of attempt number num of c's Retry node, after last (nil for the first).
func (c *nodeCall) attempt(num int, last *wfv1.NodeStatus) *nodeCall {
	opts := c.opts
	opts.attempt = true
	opts.flag = &wfv1.NodeFlag{Retried: true, Hooked: c.opts.flag != nil && c.opts.flag.Hooked}
	opts.retryParams = attemptParams(num, last)
	return &nodeCall{p: c.p, name: fmt.Sprintf("%s(%d)", c.name, num), display: fmt.Sprintf("%s(%d)", c.opts.attemptBase, num),
		call: c.call, args: c.args, boundaryID: c.boundaryID, parentJSON: c.parentJSON, opts: opts}
}

// retryAgain decides after a fulfilled attempt, in argo's order: success ends the node; shutdown and the
// workflow deadline stop retries; backoff (maxDuration, then the wait) holds the next attempt; then the
// policy, the limit and the expression. It returns true when a new attempt should start now.
func (e *Engine) retryAgain(p *Pass, n *wfv1.NodeStatus, s *wfv1.RetryStrategy, attempts []*wfv1.NodeStatus) bool {
	last := attempts[len(attempts)-1]
	v := retryStopped(p, last)
	if !v.decided {
		v = retryBackoff(p, n, s, attempts)
	}
	if !v.decided {
		v = retryRefused(s, attempts)
	}
	if !v.decided {
		return true
	}
	if v.end {
		if last.Outputs != nil {
			n.Outputs = last.Outputs.DeepCopy()
		}
		n.Daemoned = nil // a daemon whose retries ended serves no more
		p.markPhase(n, v.phase, v.msg)
	}
	return false
}

// retryVerdict is what one of retryAgain's checks decided: no attempt starts now (decided), because the
// Retry node ends with phase and msg (end) or the backoff holds the next attempt.
type retryVerdict struct {
	decided, end bool
	phase        wfv1.NodePhase
	msg          string
}

func endRetry(phase wfv1.NodePhase, msg string) retryVerdict {
	return retryVerdict{decided: true, end: true, phase: phase, msg: msg}
}

// retryStopped ends the node after a successful attempt, a shutdown or the workflow deadline.
func retryStopped(p *Pass, last *wfv1.NodeStatus) retryVerdict {
	if !last.FailedOrError() {
		return endRetry(wfv1.NodeSucceeded, "")
	}
	if st := shutdown(p); st.Enabled() {
		return endRetry(last.Phase, fmt.Sprintf("Stopped with strategy '%s'", st))
	}
	if d := deadline(p.WF); !d.IsZero() && p.Now.After(d) {
		return endRetry(last.Phase, fmt.Sprintf("retry exceeded workflow deadline %s", d))
	}
	return retryVerdict{}
}

// retryBackoff ends the node past the backoff's maxDuration, or holds the next attempt until its wait is
// over (the node says so, and the pass is requeued by then).
func retryBackoff(p *Pass, n *wfv1.NodeStatus, s *wfv1.RetryStrategy, attempts []*wfv1.NodeStatus) retryVerdict {
	b := s.Backoff
	if b == nil {
		return retryVerdict{}
	}
	last := attempts[len(attempts)-1]
	var maxDeadline time.Time
	if b.MaxDuration != "" {
		maxDuration, _ := wfv1.ParseStringToDuration(b.MaxDuration)
		maxDeadline = attempts[0].StartedAt.Add(maxDuration)
		if p.Now.After(maxDeadline) {
			return endRetry(last.Phase, "Max duration limit exceeded")
		}
	}
	wait := backoffWait(b, len(attempts))
	until := last.FinishedAt.Add(wait)
	if !maxDeadline.IsZero() && until.After(maxDeadline) {
		return endRetry(last.Phase, "Backoff would exceed max duration limit")
	}
	limit, _ := retryLimit(s) // checked when the node was created
	message := ""
	held := p.Now.Before(until) && (limit == nil || int32(len(attempts)) <= *limit)
	if held {
		p.requeueBy(until)
		message = fmt.Sprintf("Backoff for %s", humanDuration(wait))
	}
	if n.Message != message {
		n.Message = message
		p.setNode(n)
	}
	return retryVerdict{decided: held}
}

// retryRefused ends the node when the retry policy does not cover the last attempt's failure, no retries
// are left, or the retry expression says no (or cannot be evaluated).
func retryRefused(s *wfv1.RetryStrategy, attempts []*wfv1.NodeStatus) retryVerdict {
	last := attempts[len(attempts)-1]
	if !retryPolicyCovers(s, last) {
		return endRetry(last.Phase, last.Message)
	}
	if limit, _ := retryLimit(s); limit != nil && int32(len(attempts)) > *limit {
		return endRetry(last.Phase, "No more retries left")
	}
	if s.Expression != "" {
		again, err := argoexpr.EvalBool(s.Expression, env.GetFuncMap(retryScope(attempts)))
		if err != nil {
			return endRetry(wfv1.NodeError, fmt.Sprintf("retryStrategy.expression %q: %v", s.Expression, err))
		}
		if !again {
			return endRetry(last.Phase, "retryStrategy.expression evaluated to false")
		}
	}
	return retryVerdict{}
}

// retryPolicyCovers says whether the retry policy retries the last attempt's phase (Failed or Error).
func retryPolicyCovers(s *wfv1.RetryStrategy, last *wfv1.NodeStatus) bool {
	var onFailed, onError bool
	switch s.RetryPolicyActual() {
	case wfv1.RetryPolicyAlways:
		onFailed, onError = true, true
	case wfv1.RetryPolicyOnError:
		onError = true
	case wfv1.RetryPolicyOnFailure:
		onFailed = true
	case wfv1.RetryPolicyOnTransientError:
		transient := argoerrs.IsTransientErr(argoerrors.InternalError(last.Message))
		onFailed, onError = transient, transient
	}
	return (last.Phase != wfv1.NodeFailed || onFailed) && (last.Phase != wfv1.NodeError || onError)
}

// backoffWait is duration × factor^(attempts-1), capped by cap (argo's formula; the first retry waits
// duration).
func backoffWait(b *wfv1.Backoff, attempts int) time.Duration {
	base, _ := wfv1.ParseStringToDuration(b.Duration)
	wait := base
	if factor, _ := intstr.Int32(b.Factor); factor != nil && *factor > 0 {
		f := math.Pow(float64(*factor), float64(attempts-1))
		if f > float64(math.MaxInt64)/float64(max(base, 1)) {
			wait = time.Duration(math.MaxInt64)
		} else {
			wait = base * time.Duration(f)
		}
	}
	if b.Cap != "" {
		if c, err := wfv1.ParseStringToDuration(b.Cap); err == nil && wait > c {
			wait = c
		}
	}
	return wait
}

// humanDuration writes a backoff the way argo's node message does: "10 seconds", "1 minute 30 seconds".
func humanDuration(d time.Duration) string {
	unit := func(n int64, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	secs := int64(d / time.Second)
	switch {
	case d < time.Minute:
		return unit(secs, "second", "seconds")
	case d < time.Hour:
		return unit(secs/60, "minute", "minutes") + " " + fmt.Sprintf("%d seconds", secs%60)
	case d < 24*time.Hour:
		return unit(secs/3600, "hour", "hours") + " " + fmt.Sprintf("%d minutes", secs%3600/60)
	}
	return unit(secs/86400, "day", "days") + " " + fmt.Sprintf("%d hours", secs%86400/3600)
}

package engine

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestRetryStrategiesThatCanNeverApplyAreRejectedNamingTheField(t *testing.T) {
	limit := intstr.FromString("three")
	for _, tc := range []struct {
		sentence string
		s        wfv1.RetryStrategy
		want     string
	}{
		{"a limit that is not a number", wfv1.RetryStrategy{Limit: &limit}, "retryStrategy.limit"},
		{"an unknown policy", wfv1.RetryStrategy{RetryPolicy: "Sometimes"}, `retryStrategy.retryPolicy "Sometimes"`},
		{"a backoff without duration", wfv1.RetryStrategy{Backoff: &wfv1.Backoff{Factor: ptrIntstr(2)}}, "retryStrategy.backoff.duration is required"},
		{"a maxDuration that is not a duration", wfv1.RetryStrategy{Backoff: &wfv1.Backoff{Duration: "1s", MaxDuration: "soon"}}, `retryStrategy.backoff.maxDuration "soon"`},
		{"an expression that does not compile", wfv1.RetryStrategy{Expression: "retries >"}, `retryStrategy.expression "retries >" does not compile`},
		{"an expression naming an unknown variable", wfv1.RetryStrategy{Expression: "attempts < 3"}, `retryStrategy.expression "attempts < 3" does not compile`},
	} {
		err := checkRetryStrategy(&tc.s, tc.s.Expression)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to start with %q", tc.sentence, err, tc.want)
		}
	}
	ok := wfv1.RetryStrategy{Expression: `asInt(lastRetry.exitCode) == 1 && lastRetry.status == "Failed"`, Backoff: &wfv1.Backoff{Duration: "1s", Factor: ptrIntstr(2), MaxDuration: "1m"}}
	if err := checkRetryStrategy(&ok, ok.Expression); err != nil {
		t.Errorf("a valid strategy is rejected: %v", err)
	}
	// Argo evaluates an expression only after a failed attempt; one built from parameters (here an upstream
	// result that is not a boolean) may never be, so it is not judged before the first attempt.
	fromParams := wfv1.RetryStrategy{Expression: `(safe-to-retry-result == true || lastRetry.message matches 'shutdown')`}
	if err := checkRetryStrategy(&fromParams, `({{inputs.parameters.safe}} == true || lastRetry.message matches 'shutdown')`); err != nil {
		t.Errorf("an expression substituted from parameters is rejected before any attempt ran: %v", err)
	}
}

func ptrIntstr(i int32) *intstr.IntOrString { v := intstr.FromInt32(i); return &v }

func TestBackoffGrowsByFactorUpToCap(t *testing.T) {
	b := &wfv1.Backoff{Duration: "2s", Factor: ptrIntstr(3), Cap: "10s"}
	for attempts, want := range map[int]time.Duration{1: 2 * time.Second, 2: 6 * time.Second, 3: 10 * time.Second} {
		if got := backoffWait(b, attempts); got != want {
			t.Errorf("after %d attempts the wait is %s, want %s", attempts, got, want)
		}
	}
	for d, want := range map[time.Duration]string{time.Second: "1 second", 10 * time.Second: "10 seconds", 90 * time.Second: "1 minute 30 seconds"} {
		if got := humanDuration(d); got != want {
			t.Errorf("%s is written %q, want %q", d, got, want)
		}
	}
}

func TestRetryDecisions(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	attempt := func(phase wfv1.NodePhase, msg string, finishedAgo time.Duration) *wfv1.NodeStatus {
		return &wfv1.NodeStatus{Phase: phase, Message: msg, StartedAt: metav1.NewTime(now.Add(-time.Minute)), FinishedAt: metav1.NewTime(now.Add(-finishedAgo))}
	}
	two := intstr.FromInt32(2)
	for _, tc := range []struct {
		sentence string
		s        wfv1.RetryStrategy
		attempts []*wfv1.NodeStatus
		again    bool
		phase    wfv1.NodePhase
		message  string
	}{
		{"a success ends the retry", wfv1.RetryStrategy{}, []*wfv1.NodeStatus{attempt(wfv1.NodeSucceeded, "", 0)}, false, wfv1.NodeSucceeded, ""},
		{"OnFailure retries a failure", wfv1.RetryStrategy{}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "x", 0)}, true, wfv1.NodeRunning, ""},
		{"OnFailure does not retry an error", wfv1.RetryStrategy{}, []*wfv1.NodeStatus{attempt(wfv1.NodeError, "pod deleted", 0)}, false, wfv1.NodeError, "pod deleted"},
		{"OnError retries an error", wfv1.RetryStrategy{RetryPolicy: wfv1.RetryPolicyOnError}, []*wfv1.NodeStatus{attempt(wfv1.NodeError, "pod deleted", 0)}, true, wfv1.NodeRunning, ""},
		{"OnTransientError retries a transient message", wfv1.RetryStrategy{RetryPolicy: wfv1.RetryPolicyOnTransientError}, []*wfv1.NodeStatus{attempt(wfv1.NodeError, "etcdserver: leader changed", 0)}, true, wfv1.NodeRunning, ""},
		{"OnTransientError does not retry others", wfv1.RetryStrategy{RetryPolicy: wfv1.RetryPolicyOnTransientError}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "exit 1", 0)}, false, wfv1.NodeFailed, "exit 1"},
		{"the limit counts retries, not attempts", wfv1.RetryStrategy{Limit: &two}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "", 0), attempt(wfv1.NodeFailed, "", 0)}, true, wfv1.NodeRunning, ""},
		{"a spent limit ends the retry", wfv1.RetryStrategy{Limit: &two}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "", 0), attempt(wfv1.NodeFailed, "", 0), attempt(wfv1.NodeFailed, "", 0)}, false, wfv1.NodeFailed, "No more retries left"},
		{"a backoff not yet over holds the next attempt", wfv1.RetryStrategy{Limit: &two, Backoff: &wfv1.Backoff{Duration: "10s"}}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "", 5*time.Second)}, false, wfv1.NodeRunning, "Backoff for 10 seconds"},
		{"a backoff over lets it start", wfv1.RetryStrategy{Limit: &two, Backoff: &wfv1.Backoff{Duration: "10s"}}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "", 10*time.Second)}, true, wfv1.NodeRunning, ""},
		{"maxDuration past ends the retry", wfv1.RetryStrategy{Backoff: &wfv1.Backoff{Duration: "1s", MaxDuration: "30s"}}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "", 0)}, false, wfv1.NodeFailed, "Max duration limit exceeded"},
		{"an expression that is false ends the retry", wfv1.RetryStrategy{Expression: `lastRetry.status == "Error"`}, []*wfv1.NodeStatus{attempt(wfv1.NodeFailed, "", 0)}, false, wfv1.NodeFailed, "retryStrategy.expression evaluated to false"},
	} {
		wf := &wfv1.Workflow{}
		wf.Name = "wf"
		p := &Pass{WF: wf, Now: now}
		n := p.newNode(nodeAt{"wf.r", "r", "t", ""}, wfv1.NodeTypeRetry, wfv1.NodeRunning, "")
		again := (&Engine{}).retryAgain(p, n, &tc.s, tc.attempts)
		got := p.node("wf.r")
		if again != tc.again || got.Phase != tc.phase || got.Message != tc.message {
			t.Errorf("%s: again=%v %s %q, want again=%v %s %q", tc.sentence, again, got.Phase, got.Message, tc.again, tc.phase, tc.message)
		}
	}
}

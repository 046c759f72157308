package cronworkflow

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

func TestDecideConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  wfv1.ConcurrencyPolicy
		active  int
		want    concurrencyDecision
		wantErr bool
	}{
		{name: "no policy starts beside active runs", policy: "", active: 2, want: concurrencyDecision{start: true}},
		{name: "Allow starts beside active runs", policy: wfv1.AllowConcurrent, active: 1, want: concurrencyDecision{start: true}},
		{name: "Forbid starts when nothing is active", policy: wfv1.ForbidConcurrent, want: concurrencyDecision{start: true}},
		{name: "Forbid skips while a run is active", policy: wfv1.ForbidConcurrent, active: 1, want: concurrencyDecision{policyApplied: true}},
		{name: "Replace starts when nothing is active", policy: wfv1.ReplaceConcurrent, want: concurrencyDecision{start: true}},
		{name: "Replace terminates the active runs and starts", policy: wfv1.ReplaceConcurrent, active: 2,
			want: concurrencyDecision{start: true, terminateActive: true, policyApplied: true}},
		{name: "an unknown policy is an error", policy: "Sometimes", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decideConcurrency(tc.policy, tc.active)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("decideConcurrency = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestTheOrphanSweepIsJudgedOnItsMedianRoundAndPrintsEveryRound(t *testing.T) {
	round := func(controller, raw float64) OrphansRound {
		return OrphansRound{ControllerSeconds: controller, RawSeconds: raw, Ratio: controller / raw}
	}
	for _, tc := range []struct {
		name        string
		rounds      []OrphansRound
		wantRatio   float64
		wantVerdict string
		wantText    string
	}{
		{"one round stalled by the shared control plane does not decide the verdict",
			[]OrphansRound{round(11.3, 10), round(17, 10), round(11.5, 10)}, 1.15, verdictMet,
			"controller 11.50 s, raw patch loop 10.00 s, ratio 1.15× (median round; rounds 1.13×, 1.70×, 1.15×)"},
		{"two slow rounds of three are a slow sweep",
			[]OrphansRound{round(11.3, 10), round(17, 10), round(13, 10)}, 1.3, verdictNotMet,
			"ratio 1.30× (median round; rounds 1.13×, 1.70×, 1.30×)"},
		{"of an even count, the lower middle round",
			[]OrphansRound{round(12, 10), round(11, 10)}, 1.1, verdictMet, "ratio 1.10× (median round; rounds 1.20×, 1.10×)"},
		{"a single round is its own median",
			[]OrphansRound{round(9.6, 10)}, 0.96, verdictMet, "ratio 0.96× (median round; rounds 0.96×)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleReport(ControllerWFGuard)
			r.Orphans = newOrphansResult(5000, tc.rounds)
			r.evaluate()
			if d := r.Orphans.Ratio - tc.wantRatio; d > 1e-9 || d < -1e-9 {
				t.Errorf("median ratio %.4f, want %.4f", r.Orphans.Ratio, tc.wantRatio)
			}
			if want := tc.wantRatio * 10; r.Orphans.RawSeconds != 10 || r.Orphans.ControllerSeconds-want > 1e-9 || want-r.Orphans.ControllerSeconds > 1e-9 {
				t.Errorf("the figures are not the median round's: %+v", r.Orphans)
			}
			var got *Target
			for i := range r.Targets {
				if r.Targets[i].Name == "orphan sweep" {
					got = &r.Targets[i]
				}
			}
			if got == nil || got.Verdict != tc.wantVerdict || !strings.Contains(got.Measured, "median of ") {
				t.Errorf("orphan sweep target = %+v, want verdict %s naming the median", got, tc.wantVerdict)
			}
			var b bytes.Buffer
			r.WriteText(&b)
			if !strings.Contains(b.String(), tc.wantText) {
				t.Errorf("the report lacks %q:\n%s", tc.wantText, b.String())
			}
			if back := roundTrip(t, r); len(back.Orphans.Rounds) != len(tc.rounds) || back.Orphans.Ratio != r.Orphans.Ratio {
				t.Errorf("after a JSON round trip: %+v", back.Orphans)
			}
		})
	}
	if got := newOrphansResult(5000, nil); got.Ratio != 0 || got.ControllerSeconds != 0 {
		t.Errorf("the result of no rounds = %+v", got)
	}
}

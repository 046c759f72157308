package cronworkflow

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 30, 0, time.UTC) // 30 s past a minute

func mustParse(t *testing.T, spec wfv1.CronWorkflowSpec) schedules {
	t.Helper()
	s, err := parseSchedules(&spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseSchedules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    wfv1.CronWorkflowSpec
		wantErr string
	}{
		{name: "several schedules parse", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *", "0 3 * * *"}}},
		{name: "the deprecated schedule parses", spec: wfv1.CronWorkflowSpec{Schedule: "*/5 * * * *"}},
		{name: "a timezone is applied as CRON_TZ", spec: wfv1.CronWorkflowSpec{Schedules: []string{"0 1 * * *"}, Timezone: "America/Los_Angeles"}},
		{name: "a bad expression names itself", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *", "61 * * * *"}}, wantErr: `cron schedule "61 * * * *" is malformed`},
		{name: "a bad timezone is an error, not a panic", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *"}, Timezone: "Mars/Olympus"}, wantErr: "Mars/Olympus"},
		{name: "an empty CRON_TZ is an error, not a panic", spec: wfv1.CronWorkflowSpec{Schedules: []string{"CRON_TZ="}}, wantErr: "malformed"},
		{name: "no schedule at all is an error", spec: wfv1.CronWorkflowSpec{}, wantErr: "no schedule"},
		{name: "schedule and schedules together are an error", spec: wfv1.CronWorkflowSpec{Schedule: "* * * * *", Schedules: []string{"* * * * *"}}, wantErr: "both set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSchedules(&tc.spec)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLatestDue(t *testing.T) {
	minute := time.Minute
	for _, tc := range []struct {
		name      string
		spec      wfv1.CronWorkflowSpec
		after     time.Time
		now       time.Time
		want      time.Time
		wantFound bool
	}{
		{name: "nothing is due before the next tick", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *"}},
			after: t0, now: t0.Add(20 * time.Second)},
		{name: "the tick just passed is due", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *"}},
			after: t0, now: t0.Add(30 * time.Second), want: t0.Add(30 * time.Second), wantFound: true},
		{name: "of several ticks passed only the latest is due", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *"}},
			after: t0, now: t0.Add(3*minute + 40*time.Second), want: t0.Add(3*minute + 30*time.Second), wantFound: true},
		{name: "the latest tick of any schedule is due", spec: wfv1.CronWorkflowSpec{Schedules: []string{"0 * * * *", "2 12 * * *"}},
			after: t0, now: t0.Add(5 * minute), want: time.Date(2026, 12, 4, 12, 2, 0, 0, time.UTC), wantFound: true},
		{name: "a tick at the start is not due again", spec: wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *"}},
			after: t0.Add(30 * time.Second), now: t0.Add(50 * time.Second)},
		{name: "a timezone moves the tick", spec: wfv1.CronWorkflowSpec{Schedules: []string{"0 4 * * *"}, Timezone: "Europe/Paris"},
			after: t0.Add(-12 * time.Hour), now: t0, want: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC), wantFound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := mustParse(t, tc.spec).latestDue(tc.after, tc.now)
			if found != tc.wantFound || !got.Equal(tc.want) {
				t.Fatalf("latestDue = %s, %v; want %s, %v", got, found, tc.want, tc.wantFound)
			}
		})
	}
}

func TestNextTick(t *testing.T) {
	s := mustParse(t, wfv1.CronWorkflowSpec{Schedules: []string{"*/10 * * * *", "3 12 * * *"}})
	if got, want := s.next(t0), time.Date(2026, 12, 4, 12, 3, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("next = %s, want the earliest of the schedules %s", got, want)
	}
}

func TestMissedRun(t *testing.T) {
	deadline := func(s int64) *int64 { return &s }
	every := wfv1.CronWorkflowSpec{Schedules: []string{"* * * * *"}}
	last := time.Date(2026, 12, 4, 12, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		deadline  *int64
		now       time.Time
		want      time.Time
		wantFound bool
	}{
		{name: "a run missed 5 s ago starts within a 10 s deadline (argo's doc example)", deadline: deadline(10),
			now: last.Add(65 * time.Second), want: last.Add(time.Minute), wantFound: true},
		{name: "a run missed 5 s ago is not started with a 3 s deadline", deadline: deadline(3), now: last.Add(65 * time.Second)},
		{name: "without startingDeadlineSeconds a missed run never starts", now: last.Add(65 * time.Second)},
		{name: "a deadline of 0 never starts a missed run", deadline: deadline(0), now: last.Add(65 * time.Second)},
		{name: "only the latest of several missed runs is considered", deadline: deadline(30),
			now: last.Add(4*time.Minute + 10*time.Second), want: last.Add(4 * time.Minute), wantFound: true},
		{name: "nothing was missed before the next tick", deadline: deadline(300), now: last.Add(30 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := mustParse(t, every).missedRun(last, tc.deadline, tc.now)
			if found != tc.wantFound || !got.Equal(tc.want) {
				t.Fatalf("missedRun = %s, %v; want %s, %v", got, found, tc.want, tc.wantFound)
			}
		})
	}
}

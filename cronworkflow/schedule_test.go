package cronworkflow

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/robfig/cron/v3"
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

// countingSchedule counts the calls of Next, the unit of work of finding a tick.
type countingSchedule struct {
	cron.Schedule
	calls int
}

func (c *countingSchedule) Next(t time.Time) time.Time {
	c.calls++
	return c.Schedule.Next(t)
}

// Issue #44 item 9: status.lastScheduledTime is written by the CronWorkflow's writer, and the missed-run
// rule walked every tick since it.
func TestTheLatestTickIsFoundWithoutWalkingTheTicksSinceLastScheduled(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 30, 500, time.UTC)
	for _, tc := range []struct {
		sentence string
		spec     string
		after    time.Time
		limit    time.Time
		want     time.Time
		found    bool
	}{
		{sentence: "@every 1s since ten years back finds the last second", spec: "@every 1s",
			after: now.AddDate(-10, 0, 0), limit: now, want: now.Truncate(time.Second), found: true},
		{sentence: "@every 1s since the year 1 finds the last second", spec: "@every 1s",
			after: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), limit: now, want: now.Truncate(time.Second), found: true},
		{sentence: "every minute since the year 1 finds the last minute", spec: "* * * * *",
			after: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), limit: now, want: now.Truncate(time.Minute), found: true},
		{sentence: "a yearly schedule finds this year's tick", spec: "0 0 1 1 *",
			after: now.AddDate(-3, 0, 0), limit: now, want: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), found: true},
		{sentence: "a tick exactly at the limit counts", spec: "* * * * *",
			after: now.Add(-time.Hour), limit: now.Truncate(time.Minute), want: now.Truncate(time.Minute), found: true},
		{sentence: "a tick exactly at the start does not", spec: "* * * * *",
			after: now.Truncate(time.Minute), limit: now},
		{sentence: "a start after the limit finds nothing", spec: "@every 1s", after: now.Add(time.Hour), limit: now},
		{sentence: "a schedule that never fires finds nothing", spec: "0 0 30 2 *", after: now.AddDate(-1, 0, 0), limit: now},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			parsed, err := cron.ParseStandard(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			sched := &countingSchedule{Schedule: parsed}
			got, found := latestTick(sched, tc.after, tc.limit)
			if found != tc.found || !got.Equal(tc.want) {
				t.Fatalf("latestTick = %s, %v; want %s, %v", got, found, tc.want, tc.found)
			}
			if sched.calls > 100 {
				t.Fatalf("latestTick called Next %d times; it must not walk the ticks", sched.calls)
			}
		})
	}
}

// latestTick agrees with walking every tick, on schedules of every shape and ranges of up to a few days.
func TestTheLatestTickIsTheLastOneAWalkFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 9))
	specs := []string{"@every 1s", "@every 7s", "@every 90s", "* * * * *", "*/5 * * * *", "0 * * * *", "15 3 * * *",
		"0 0 * * 1", "30 2 1 * *", "CRON_TZ=Europe/Paris 0 2 * * *", "CRON_TZ=America/New_York 30 1 * * *"}
	base := time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC) // across Europe's and America's DST changes
	for range 2000 {
		spec := specs[rng.IntN(len(specs))]
		sched, err := cron.ParseStandard(spec)
		if err != nil {
			t.Fatal(err)
		}
		after := base.Add(time.Duration(rng.Int64N(int64(14 * 24 * time.Hour))))
		limit := after.Add(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
		var walked time.Time
		for t := sched.Next(after); !t.IsZero() && !t.After(limit); t = sched.Next(t) {
			walked = t
		}
		got, found := latestTick(sched, after, limit)
		if found != !walked.IsZero() || !got.Equal(walked) {
			t.Fatalf("%q in (%s, %s]: latestTick = %s, %v; walking finds %s", spec, after, limit, got, found, walked)
		}
	}
}

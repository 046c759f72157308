package cronworkflow

import (
	"fmt"
	"math"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/robfig/cron/v3"
)

// maxNameLength leaves room for the "-<unix time>" suffix of run names within 63 characters (argo's limit).
const maxNameLength = 52

// schedules are the parsed schedules of one CronWorkflow.
type schedules []cron.Schedule

// scheduleStrings are the schedule expressions as argo reads them: spec.schedule (deprecated) when set, else
// spec.schedules, each prefixed with CRON_TZ=<timezone> when spec.timezone is set.
func scheduleStrings(spec *wfv1.CronWorkflowSpec) []string {
	raw := spec.Schedules
	if spec.Schedule != "" {
		raw = []string{spec.Schedule}
	}
	out := make([]string, 0, len(raw))
	for _, s := range raw {
		if spec.Timezone != "" {
			s = "CRON_TZ=" + spec.Timezone + " " + s
		}
		out = append(out, s)
	}
	return out
}

// scheduleKey identifies a spec's schedules (argo's last-used-schedule annotation value).
func scheduleKey(spec *wfv1.CronWorkflowSpec) string {
	return strings.Join(scheduleStrings(spec), ",")
}

// parseSchedules parses the spec's schedules; an error names the expression that is wrong.
func parseSchedules(spec *wfv1.CronWorkflowSpec) (schedules, error) {
	if spec.Schedule != "" && len(spec.Schedules) > 0 {
		return nil, fmt.Errorf("spec.schedule and spec.schedules are both set: use only spec.schedules")
	}
	strs := scheduleStrings(spec)
	if len(strs) == 0 {
		return nil, fmt.Errorf("no schedule: set spec.schedules")
	}
	out := make(schedules, 0, len(strs))
	for _, s := range strs {
		parsed, err := parseSchedule(s)
		if err != nil {
			return nil, err
		}
		out = append(out, parsed)
	}
	return out, nil
}

// parseSchedule parses one standard (5-field) expression; robfig/cron panics on some malformed CRON_TZ
// prefixes, which must become an error here, never a crash.
func parseSchedule(s string) (parsed cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			parsed, err = nil, fmt.Errorf("cron schedule %q is malformed: %v", s, r)
		}
	}()
	parsed, err = cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("cron schedule %q is malformed: %w", s, err)
	}
	return parsed, nil
}

// latestDue is the latest time any schedule fires in (after, now]; false when none does.
func (s schedules) latestDue(after, now time.Time) (time.Time, bool) {
	var latest time.Time
	for _, sched := range s {
		if t, ok := latestTick(sched, after, now); ok && t.After(latest) {
			latest = t
		}
	}
	return latest, !latest.IsZero()
}

// latestTick is the latest time sched fires in (after, limit], found without walking the ticks between:
// after comes from status.lastScheduledTime, which the CronWorkflow's writer sets, and walking every
// second of an "@every 1s" schedule since a date years back took unbounded CPU.
func latestTick(sched cron.Schedule, after, limit time.Time) (time.Time, bool) {
	if !after.Before(limit) {
		return time.Time{}, false
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok {
		// "@every d" counts from its starting point: its ticks are after's whole second plus multiples of d.
		tick := every.Next(after)
		if tick.After(limit) {
			return time.Time{}, false
		}
		for {
			// Sub saturates past about 292 years: from a date further back it takes a few strides.
			gap := limit.Sub(tick)
			tick = tick.Add(gap / every.Delay * every.Delay)
			if gap < math.MaxInt64 {
				return tick, true
			}
		}
	}
	// A calendar schedule's ticks are fixed instants on whole seconds, so "sched fires in (x, limit]" holds
	// for every x before the latest one and for none from it on: a binary search over whole seconds finds it
	// in about 40 steps whatever the range.
	firesBy := func(x time.Time) bool {
		t := sched.Next(x)
		return !t.IsZero() && !t.After(limit)
	}
	if !firesBy(after) {
		return time.Time{}, false
	}
	lo, hi := after, limit // firesBy(lo) holds; firesBy(hi) does not (Next is after its argument)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if firesBy(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sched.Next(lo), true
}

// next is the earliest time after t any schedule fires; zero when none ever does.
func (s schedules) next(t time.Time) time.Time {
	var earliest time.Time
	for _, sched := range s {
		n := sched.Next(t)
		if !n.IsZero() && (earliest.IsZero() || n.Before(earliest)) {
			earliest = n
		}
	}
	return earliest
}

// missedRun applies argo's rule for runs missed while no controller ran: from the last scheduled time, the
// latest time a schedule should have fired before now is started only if now is still within
// startingDeadlineSeconds of it. The schedules are tried in order; the first that qualifies wins.
func (s schedules) missedRun(lastScheduled time.Time, deadlineSeconds *int64, now time.Time) (time.Time, bool) {
	if deadlineSeconds == nil {
		return time.Time{}, false
	}
	deadline := time.Duration(*deadlineSeconds) * time.Second
	for _, sched := range s {
		// The latest tick strictly before now: cron ticks are whole seconds.
		missed, ok := latestTick(sched, lastScheduled, now.Add(-time.Nanosecond))
		if ok && now.Before(missed.Add(deadline)) {
			return missed, true
		}
	}
	return time.Time{}, false
}

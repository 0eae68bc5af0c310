package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/cron/schedule"
)

// Missed is what a job does with slots that passed while schedd was down or the clock
// jumped forward.
type Missed string

// The missed-run policies.
const (
	// MissedRunOnce (the default) runs once for all missed slots, as systemd's
	// Persistent=true does.
	MissedRunOnce Missed = "run_once"
	// MissedSkip records the missed slots as one skipped task and runs nothing for them.
	MissedSkip Missed = "skip"
)

// Concurrency is what a job does with a slot that comes while its previous run is active
// (queued or running).
type Concurrency string

// The concurrency policies.
const (
	// Forbid (the default) records the new run as skipped with reason overlap.
	Forbid Concurrency = "forbid"
	// Replace cancels the active run; the new one starts once it has ended.
	Replace Concurrency = "replace"
	// Allow runs both.
	Allow Concurrency = "allow"
)

// Retry is a job's retry policy for runs that fail transiently.
type Retry struct {
	// Max is how many times one run is retried; 0: never.
	Max int
	// Schedule is the wait before a retry: After(k) after the k-th failure of the job in a
	// row; at least one entry when Max > 0. A success resets the count.
	Schedule backoff.Schedule
}

// Job is one configured cron job. Every field is taken as given: the daemon passes the
// config file's values, which internal/config has defaulted and checked, and a zero means
// what it means there. New and Update refuse a job the service cannot run (see check).
type Job struct {
	// Name identifies the job; its history, persisted state and stagger offset follow it.
	Name     string
	Schedule schedule.Schedule
	// Location is the zone Schedule works in, shown in the status (nil: none, UTC).
	Location *time.Location
	// Jitter staggers each run by a fixed offset in [0, Jitter) derived from Name.
	Jitter           time.Duration
	Missed           Missed        // run_once or skip
	StartingDeadline time.Duration // > 0: a run that cannot start this long after it was due is skipped
	Concurrency      Concurrency   // forbid, replace or allow
	Retry            Retry
	// DisableAfter disables the job after this many failures in a row; 0: never.
	DisableAfter int
	// HistoryLimit (>= 1) is how many ended tasks of the job are kept.
	HistoryLimit int
	// Priority orders the job queue: lower runs first (like deliveries); a waiting task
	// gains one level per Config.AgingStep.
	Priority int
	// Timeout (> 0) bounds a run; an action's own timeout wins.
	Timeout time.Duration
	Action  Action
	// Disabled is the config's enabled: false. SetEnabled overrides it, persistently.
	Disabled bool
}

// maxPriority bounds |Priority|, so that a priority's weight in the queue cannot overflow.
const maxPriority = 1 << 20

// check reports what is wrong with j, naming the field. It fills nothing in.
func (j Job) check(d *Deps) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if j.Schedule == nil {
		bad("no schedule")
	}
	switch j.Missed {
	case MissedRunOnce, MissedSkip:
	default:
		bad("missed %q is not run_once or skip", j.Missed)
	}
	switch j.Concurrency {
	case Forbid, Replace, Allow:
	default:
		bad("concurrency %q is not forbid, replace or allow", j.Concurrency)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"jitter", j.Jitter}, {"starting_deadline", j.StartingDeadline}, {"timeout", j.Timeout}} {
		if f.v < 0 {
			bad("%s %v is negative", f.name, f.v)
		}
	}
	if j.Timeout == 0 {
		bad("timeout is zero")
	}
	if j.Retry.Max < 0 {
		bad("retry max %d is negative", j.Retry.Max)
	}
	if j.Retry.Max > 0 && len(j.Retry.Schedule) == 0 {
		bad("retry max %d with an empty retry schedule", j.Retry.Max)
	}
	for _, w := range j.Retry.Schedule {
		if w < 0 {
			bad("retry schedule entry %v is negative", w)
		}
	}
	if j.DisableAfter < 0 {
		bad("disable_after %d is negative", j.DisableAfter)
	}
	if j.HistoryLimit < 1 {
		bad("history_limit %d is less than 1", j.HistoryLimit)
	}
	if j.Priority > maxPriority || j.Priority < -maxPriority {
		bad("priority %d is out of [-%d, %d]", j.Priority, maxPriority, maxPriority)
	}
	if j.Action == nil {
		bad("no action")
	} else if err := j.Action.Check(d); err != nil {
		bad("action %s: %w", j.Action.Kind(), err)
	}
	return errors.Join(errs...)
}

// checkName refuses names that cannot be told apart in a run key, a URL path or a log line.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > 128 {
		return fmt.Errorf("name %.20q... is longer than 128 bytes", name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' || r == '@' || r == '!'
	}); i >= 0 {
		return fmt.Errorf("name %q: %q is not allowed in a name", name, name[i:i+1])
	}
	return nil
}

// prepare checks jobs and returns a copy of them; the error names every bad job.
func prepare(jobs []Job, d *Deps) ([]Job, error) {
	out := make([]Job, len(jobs))
	seen := make(map[string]bool, len(jobs))
	var errs []error
	for i, j := range jobs {
		if err := checkName(j.Name); err != nil {
			errs = append(errs, fmt.Errorf("cron job %d: %w", i+1, err))
			continue
		}
		if seen[j.Name] {
			errs = append(errs, fmt.Errorf("cron job %s: defined twice", j.Name))
			continue
		}
		seen[j.Name] = true
		out[i] = j
		if err := out[i].check(d); err != nil {
			errs = append(errs, fmt.Errorf("cron job %s: %w", j.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Package restart coordinates restart requests for the gateway. Requests come from
// SIGUSR1, `schedd restart`, the control API and config reloads; at most one restart is
// pending and at most one runs. A pending restart waits its delay plus what is left of the
// cooldown since the last restart, then, when deferral is on, until the gateway is idle or
// max_wait has passed (then it is forced). Requests that arrive meanwhile merge into it
// (their reasons kept); a sooner one pulls it earlier; one that arrives while a restart
// runs becomes exactly one follow-up. A stop cancels what is pending.
//
// One goroutine, Run, owns every timer; Request is a cheap round trip to it, so a storm of
// signals never piles up goroutines.
package restart

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
)

// Limits: a request's delay is clamped to MaxDelay, and the idle check runs at most every
// MinPoll.
const (
	MaxDelay   = api.MaxRestartDelay
	MinPoll    = 10 * time.Millisecond
	historyLen = 20
)

// A restart keeps the reasons of its last MaxReasons requests (and counts them all), each
// cut at MaxReasonLen bytes: thousands of merged requests keep the status, the replies,
// the log lines and restart.json small.
const (
	MaxReasons   = 5
	MaxReasonLen = 200
)

// ErrStopping is what waiters get when schedd stops before their restart ran.
var ErrStopping = errors.New("schedd is stopping; the restart was cancelled")

// Method is how a restart is done.
type Method string

// The restart methods.
const (
	MethodRespawn Method = api.RestartMethodRespawn
	MethodSignal  Method = api.RestartMethodSignal
)

// Request asks for a restart.
type Request struct {
	Reason string
	Source api.RestartSource
	// Delay overrides the configured delay (clamped to 0..60 s); nil uses it.
	Delay *time.Duration
	// Now skips the delay, the cooldown and the idle deferral.
	Now bool
	// MaxWait overrides the configured deferral ceiling for this restart (0 keeps it).
	MaxWait time.Duration
	// Method overrides the configured method for this restart ("" keeps it). Merged
	// requests restart by respawn if any of them asks for it: a fresh process also does
	// what an in-process restart would.
	Method Method
}

// Counter reports how much work the gateway has in flight; 0 is idle. An error (or a
// check that outlives its timeout) means "not idle".
type Counter interface {
	Inflight(ctx context.Context) (int, error)
}

// Outcome is what the restarter reports for one restart.
type Outcome struct {
	OK          bool
	PID         int
	PreviousPID int
	Error       string
}

// Restarter performs a restart (the supervisor).
type Restarter interface {
	Restart(ctx context.Context, m Method) (Outcome, error)
}

// Config is the coordinator's configuration. Every field is taken as given: the daemon
// passes the config file's values, which internal/config has defaulted and checked, and a
// zero means what it means there. New and Reconfigure refuse a value the coordinator
// cannot run with (see Check).
type Config struct {
	Delay    time.Duration // for requests without their own, 0..MaxDelay; 0: at once
	Cooldown time.Duration // minimum gap between restarts, applied as extra delay; 0: none
	Method   Method        // respawn or signal
	// Idle, when set, defers restarts until the gateway is idle (unless a request says Now).
	Idle         Counter
	Poll         time.Duration // how often Idle is asked, at least MinPoll
	MaxWait      time.Duration // then the restart is forced; at least Poll
	ProbeTimeout time.Duration // per Idle check and fence call; positive when Idle is set
	// Fence, with Idle, closes the gateway's admission once Idle says idle and waits for it
	// to report ready before the restart.
	Fence Fence
}

// Check refuses a configuration the coordinator cannot run with. It fills nothing in.
func (c Config) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("restart config: "+format, args...)) }
	if c.Delay < 0 || c.Delay > MaxDelay {
		bad("delay %v is not in 0..%v", c.Delay, MaxDelay)
	}
	if c.Cooldown < 0 {
		bad("cooldown %v is negative", c.Cooldown)
	}
	if c.Method != MethodRespawn && c.Method != MethodSignal {
		bad("method %q is not %s or %s", c.Method, MethodRespawn, MethodSignal)
	}
	if c.Poll < MinPoll {
		bad("poll %v is less than %v", c.Poll, MinPoll)
	}
	if c.MaxWait < c.Poll {
		bad("max wait %v is less than the poll %v", c.MaxWait, c.Poll)
	}
	if c.Idle != nil && c.ProbeTimeout <= 0 {
		bad("probe timeout %v is not positive", c.ProbeTimeout)
	}
	return errors.Join(errs...)
}

func clampDelay(d time.Duration) time.Duration { return min(max(d, 0), MaxDelay) }

// cleanReason makes a request's reason one line of text: control characters become
// spaces, white space at the ends goes, and a reason over MaxReasonLen bytes is cut on a
// character boundary and ends with "…" (MaxReasonLen bytes in all).
func cleanReason(s string) string {
	if len(s) > 4*MaxReasonLen { // no need to map what will be cut
		s = s[:4*MaxReasonLen]
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD")))
	if len(s) > MaxReasonLen {
		cut := MaxReasonLen - len(cutMark)
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimRightFunc(s[:cut], unicode.IsSpace) + cutMark
	}
	return s
}

// cutMark ends a reason that was cut.
const cutMark = "…"

// keepLast appends v to s and drops the oldest elements over MaxReasons.
func keepLast[T any](s []T, v T) []T {
	if len(s) < MaxReasons {
		return append(s, v)
	}
	copy(s, s[len(s)-MaxReasons+1:])
	s = s[:MaxReasons]
	s[MaxReasons-1] = v
	return s
}

// BoundReasons bounds reasons read from elsewhere (a restart.json an older schedd wrote)
// as a restart bounds its own: each cleaned and cut, the last MaxReasons kept.
func BoundReasons(reasons []string) []string {
	if len(reasons) > MaxReasons {
		reasons = reasons[len(reasons)-MaxReasons:]
	}
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = cleanReason(r)
	}
	return out
}

// JoinReasons is the reason of a restart that served requests requests, whose last
// reasons are reasons: "; "-separated, saying how many earlier ones are not kept.
func JoinReasons(reasons []string, requests int) string {
	s := strings.Join(reasons, "; ")
	if n := requests - len(reasons); n > 0 {
		s += fmt.Sprintf(" (and %d earlier requests)", n)
	}
	return s
}

// The Result modes.
const (
	ModeImmediate = "immediate" // Now: no delay, cooldown or deferral
	ModeScheduled = "scheduled" // after the delay (and cooldown), no deferral
	ModeDeferred  = "deferred"  // waited for the gateway to be idle
	// ModeRecovered: an earlier schedd began it and died; this one's first gateway ended it.
	ModeRecovered = "recovered"
)

// Ticket is the answer to a request.
type Ticket struct {
	Coalesced bool               `json:"coalesced"` // merged into a restart already pending (or running's follow-up)
	Pending   api.RestartPending `json:"pending"`   // the restart it belongs to, as of the reply
	done      <-chan outcome
}

type outcome struct {
	res api.RestartResult
	err error
}

// Wait blocks until the ticket's restart has run (or schedd stops) and returns its result.
func (t Ticket) Wait(ctx context.Context) (api.RestartResult, error) {
	select {
	case o := <-t.done:
		return o.res, o.err
	case <-ctx.Done():
		return api.RestartResult{}, ctx.Err()
	}
}

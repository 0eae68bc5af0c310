package heartbeat

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Cooldown gate constants (upstream heartbeat-cooldown.ts).
const (
	// MinEventSpacing is the least time between the start of a run and an event wake.
	MinEventSpacing = 30 * time.Second
	// FloodWindow and FloodStarts: this many run starts within the window defer further
	// wakes until the oldest of them leaves the window.
	FloodWindow = 60 * time.Second
	FloodStarts = 5
	// startRing is how many run starts an agent remembers.
	startRing = FloodStarts + 1
	// seekHorizon bounds the search for the next active slot.
	seekHorizon = 7 * 24 * time.Hour
)

func intervalMs(interval time.Duration) int64 { return max(1, interval.Milliseconds()) }

// PhaseGrid is the resolution of phases. Agents whose slots fall on the same grid point
// share one timer wakeup and one burst: 10,000 agents every 30 s wake the scheduler 10
// times a second instead of about 333 times. The grid trades CPU for lateness: a burst's
// pulses share its fixed cost (the wakeups of the scheduler, the dispatcher and the
// runtime's threads), but they also queue for the CPU, so the last pulse of a burst starts
// later the larger the burst is. With 10,000 agents and an HTTP target on two cores, a
// 250 ms grid (bursts of 83) cost 0.3 % of a core less and put p99 lateness at 11-13 ms;
// 100 ms (bursts of 33) keeps it near 5 ms. A pulse still fires on its slot; only the
// phases are coarser.
const PhaseGrid = 100 * time.Millisecond

// Phase is the agent's stable offset inside its interval: the first four bytes of
// sha256(seed + ":" + agentID), big endian, taken modulo the number of PhaseGrid steps in
// the interval and scaled back to a whole number of steps. An interval shorter than the
// grid uses milliseconds, as upstream does for every interval.
func Phase(seed, agentID string, interval time.Duration) time.Duration {
	sum := sha256.Sum256([]byte(seed + ":" + agentID))
	h := int64(binary.BigEndian.Uint32(sum[:4]))
	i, g := intervalMs(interval), PhaseGrid.Milliseconds()
	if steps := i / g; steps > 0 {
		return time.Duration(h%steps*g) * time.Millisecond
	}
	return time.Duration(h%i) * time.Millisecond
}

// NextSlot is the first slot strictly after now: slots sit at Unix-epoch multiples of the
// interval plus the phase, so they are UTC-anchored and the same across restarts.
func NextSlot(now time.Time, interval, phase time.Duration) time.Time {
	i := intervalMs(interval)
	nowMs := now.UnixMilli()
	delta := ((phase.Milliseconds()-nowMs%i)%i + i) % i
	if delta == 0 {
		delta = i
	}
	return time.UnixMilli(nowMs + delta).UTC()
}

// Slot is a schedule remembered from before a reload or restart.
type Slot struct {
	Interval time.Duration
	Phase    time.Duration
	NextDue  time.Time
}

// ResolveNextDue keeps prev.NextDue when interval and phase are unchanged and it is still
// in the future (a reload or restart does not move the schedule), else the next slot.
func ResolveNextDue(now time.Time, interval, phase time.Duration, prev *Slot) time.Time {
	if prev != nil && prev.Interval == interval && prev.Phase == phase && prev.NextDue.After(now) {
		return prev.NextDue
	}
	return NextSlot(now, interval, phase)
}

// SeekActive returns the first time from start, stepping by whole intervals (at least one
// minute), at which active is true, looking at most seven days ahead. If none is, it
// returns start and the run-time gate skips it.
func SeekActive(start time.Time, interval time.Duration, active func(time.Time) bool) time.Time {
	i := intervalMs(interval)
	step := time.Duration(i*((60_000+i-1)/i)) * time.Millisecond
	end := start.Add(seekHorizon)
	for t := start; !t.After(end); t = t.Add(step) {
		if active(t) {
			return t
		}
	}
	return start
}

// advanceDue is the next due time after a run (or a skip that advances): any reason but
// interval to now + interval (it counts as a fresh run); an interval run to the first slot
// more than half an interval after now. For a run on its slot that is the next slot; for
// an interval run that came an interval after a manual one, off the slots, it is not the
// slot a moment later, so two runs are never less than half an interval apart unless a
// wake asks. The result is moved past quiet hours.
func advanceDue(now time.Time, kind ReasonKind, interval, phase time.Duration, active func(time.Time) bool) time.Time {
	next := now.Add(interval)
	if kind == KindInterval {
		next = NextSlot(now.Add(interval/2), interval, phase)
	}
	return SeekActive(next, interval, active)
}

// cooldown decides whether a wake of kind may start a run now, given the agent's recent
// run starts (oldest first). Manual and interval wakes are exempt: a person asked, or the
// schedule already spaces them one per slot. Every other wake is deferred while 5 runs
// started in the last 60 s (flood, until the oldest of them is 60 s old, +1 ms) and within
// 30 s of the last start (min-spacing); an agent's first run is never deferred.
func cooldown(kind ReasonKind, starts []time.Time, now time.Time) (until time.Time, reason string, deferred bool) {
	if kind == KindManual || kind == KindInterval || len(starts) == 0 {
		return time.Time{}, "", false
	}
	if n := len(starts); n >= FloodStarts {
		oldest := starts[n-FloodStarts]
		if now.Sub(oldest) < FloodWindow {
			return oldest.Add(FloodWindow + time.Millisecond), SkipFlood, true
		}
	}
	last := starts[len(starts)-1]
	if now.Sub(last) < MinEventSpacing {
		return last.Add(MinEventSpacing), SkipMinSpacing, true
	}
	return time.Time{}, "", false
}

// recordStart returns the ring of recent run starts with t appended. Starts a flood window
// or more before t are dropped: the cooldown gate can no longer see them (it looks at the
// last start and at starts within the window), and the state file stays small. It never
// writes to the slice it was given, so earlier snapshots of the ring stay valid.
func recordStart(starts []time.Time, t time.Time) []time.Time {
	keep := starts[max(0, len(starts)+1-startRing):]
	for len(keep) > 0 && t.Sub(keep[0]) >= FloodWindow {
		keep = keep[1:]
	}
	out := make([]time.Time, 0, len(keep)+1)
	return append(append(out, keep...), t)
}

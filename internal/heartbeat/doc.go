// Package heartbeat decides when and whether each agent's heartbeat runs, and pulses the
// agent's target when it does. The gateway keeps the "what" (its handler does the work
// when pulsed); this package owns the "when" and the "whether".
//
// Three timing layers are kept apart, as upstream does:
//
//  1. the wake Dispatcher coalesces wake requests (250 ms, keyed by agent and session,
//     never downgrading a pending reason), runs one batch at a time, and retries busy or
//     failed batches after a one-second cooldown that sooner requests cannot pre-empt;
//  2. per-agent schedules put each agent on phase slots (epoch multiples of its interval
//     plus a stable per-agent phase), keep due times across config reloads and restarts,
//     and skip ahead past quiet hours;
//  3. a cooldown gate spaces event-driven wakes 30 s apart and stops floods (5 starts in
//     60 s); manual wakes are exempt.
//
// Service ties them together behind one timer for all agents. It takes plain structs and
// small interfaces (Gateway, StateStore, outbound.RunFunc) so the daemon wires it without this
// package knowing about config files, processes or sockets.
//
// Where this package deliberately differs from the heartbeat runner of the gateways it
// replaces:
//
//   - Pulses run on a worker pool, one at a time per agent: a slow target delays no other
//     agent, and a slot that comes while the agent's previous pulse still runs is skipped
//     as "in-progress" (never overlapping, never queued up). A busy target re-enters the
//     dispatcher's one-second retry when it answers.
//   - A skipped wake moves the schedule only when it was the interval slot itself; a
//     skipped manual or event wake ran nothing, so it does not count as a fresh run. A
//     targeted wake skipped as requests-in-flight does not move it either.
//   - The flood guard spares interval wakes: the schedule already spaces them one per slot.
//   - A timer that fires while a batch runs is parked instead of re-armed every delay, which
//     keeps upstream's instants without spinning on zero-delay timers.
//   - A batch still running for a replaced handler hands its unfinished wakes to the new
//     one and never touches the new lifecycle's state (upstream's later generation fence).
//   - A backward step of the wall clock rebases the schedule (R-ENV-01).
//   - Phases are whole multiples of PhaseGrid (100 ms) rather than of a millisecond, so
//     agents share timer wakeups: 10,000 agents every 30 s wake the scheduler 10 times a
//     second, not about 333 times. The spread over the interval is the same.
//   - State writes are spaced by 2,000 times the last write's duration (at least 5 s), so
//     saving many agents' state stays under 0.05 % of a core. Slots are epoch-aligned, so
//     a restart after a crash still neither resets an interval nor fires a slot twice;
//     what a crash loses is the last outcomes and run starts since the last write.
//
// Active hours are wall-clock windows, on purpose: people mean local clock times. A window
// that spans a DST transition is shorter or longer that day (in America/New_York a
// 22:00-06:00 window lasts 7 h on the spring-forward night and 9 h on the fall-back night),
// a window inside a skipped hour never opens that day, and one inside a repeated hour is
// open twice.
package heartbeat

// Package outbound makes schedd's outbound calls: one HTTP exchange (Exchange) and one
// command run (RunFunc.Run), with one classification of how the call went (Verdict:
// success, transient or permanent, with a reason and the destination's Retry-After).
//
// Delivery sinks, heartbeat targets, cron actions and gateway probes all send through it,
// and each keeps only what is its own: a sink's permanent-error patterns, a heartbeat's
// reading of the reply, a probe's meaning of "ready". The command runner is a RunFunc so
// that tests inject one; nil runs the command with internal/platform.
//
// The package imports no feature: only internal/platform and internal/backoff.
package outbound

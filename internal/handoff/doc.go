// Package handoff owns schedd replacing itself with a fresh process (`schedd restart
// --daemon`, or after an upgrade replaced its binary), from both sides of the handover:
//
//   - the plan (plan.go): how this host brings schedd back, supervised by its service
//     manager, spawned as a detached successor, or not at all;
//   - the old schedd (replace.go): one replacement at a time, the check of the binary on
//     disk before anything is stopped, starting the successor or the task helper, and
//     the last act the daemon carries out once the gateway is stopped;
//   - the successor (successor.go): waiting until the old schedd has handed over and
//     exited before it takes the state-dir lock;
//   - the task helper (helper.go): the hidden `schedd respawn-helper` that brings schedd
//     back through its scheduled task and judges success by a new pid.
//
// The daemon hands it what it needs (the environment, the config path, a way to pass the
// last act to its main loop, a way to ask schedd's pid); processes that outlive schedd are
// started through internal/platform.
package handoff

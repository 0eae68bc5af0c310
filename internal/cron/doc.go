// Package cron runs schedd's cron jobs: it turns each job's schedule slots into tasks,
// queues them by priority, runs them on a bounded pool of workers, and keeps every task in
// a task store (store.TaskStore: on one host the SQLite file cron.db in the state dir,
// opened once a job is configured; on a fleet the shared PostgreSQL database), so that jobs
// fire while the gateway is down and their runs survive a crash of either process.
// When a slot is due comes from package schedule; what happens then is decided here.
//
// Timing. A job's slot is due at the slot plus its stagger offset (schedule.Offset of its
// name, in [0, jitter)). The loop sleeps until the next due instant, at most 30 s so that
// a jump of the wall clock or a suspend is noticed, and sets no timer at all while nothing
// is scheduled. The last slot handled is persisted with the task it produced, in one
// transaction.
//
// Missed runs. Slots in (last slot, now] that the loop sees more than a minute late were
// missed: schedd was down, the host slept or the clock jumped forward. missed: run_once
// (the default) runs one catch-up task for the newest of them, as systemd's Persistent=true;
// missed: skip records them as one skipped task (reason missed, with their count) and runs
// nothing for them. Either way a starting_deadline skips a run that could not start that
// long after it was due (reason deadline). At most one run comes of any number of missed
// slots, and the newest is found without walking every missed slot. A job whose schedule
// changed, or that is enabled again, starts from now without catching up.
//
// Tasks. Every run is a task: queued → running → succeeded | failed | timed_out | cancelled
// | skipped; a task found running at start-up is lost (schedd was killed mid-run). A task is
// committed as running before its action starts, so a crash can only leave it running in the
// store, never lose it. UNIQUE (run_key, attempt), with run key "job@slot", makes a slot run
// at most once whatever happens to the process (P24). On a clean stop running tasks get
// Config.Drain to end, then are cancelled (reason stopped) and retried after the restart;
// queued ones stay queued, attempt unchanged, and run after it.
//
// Concurrency. forbid (the default) records a run that comes while the job's previous one
// is still queued or running as skipped (overlap); replace cancels it and starts the new
// one once it has ended; allow runs both.
//
// Failures. failed, timed_out, lost, and cancelled by a shutdown count as failures of the
// job. A failure is transient or permanent: an unmarked action error is transient, as for
// the delivery sinks; exec exit 75 (EX_TEMPFAIL), death by a signal and timeouts are
// transient, other exit codes and a command that cannot start are permanent; http 408, 425,
// 429, 5xx and network errors are transient, other statuses permanent. A transient failure
// is retried, up to retry.max times per run, after retry.schedule.After(k) where k counts
// the job's failures in a row (default 30s, 1m, 5m, 15m, 60m); a success resets k. A job
// has at most one retry pending: a newer failure's retry, or a due slot, supersedes it
// (recorded as a skipped task). After disable_after failures in a row (default 10) the job
// is disabled: logged once at error level, shown in the status with the reason, until
// SetEnabled turns it on again. Cancelled, replaced and skipped runs are no failures.
//
// The job queue. Due tasks wait in a bounded queue (Config.QueueSize) for Config.Workers
// workers. A task's rank is its enqueue time plus its job's priority times the aging step:
// lower priorities first, FIFO within one, and a waiting task gains a level per step, so a
// low priority still runs under a steady high-priority load. A task that finds the queue
// full is recorded as skipped (queue_full) and counted in the status.
//
// Where this differs from the cron of the gateways it replaces: retries are tasks of their own
// and do not push the job's next slot back; a slot is never run twice (upstream's run log is
// not a unique key); lost tasks are retried once per the policy instead of a five-minute
// grace; a schedule that cannot compute its next slot does not exist here (schedules are
// checked when the config is loaded), so there is no auto-disable for schedule errors.
package cron

package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// task is one run of a job as the service keeps it: every queued or running task, and
// ended ones until their state is committed.
type task struct {
	id      int64
	job     string
	kind    api.TaskKind
	runKey  string // a slot's: formatted when the task is first written (flush)
	attempt int
	slot    time.Time // zero for a manual run
	due     time.Time
	state   api.TaskState
	reason  string
	queued  time.Time
	started time.Time
	ended   time.Time

	exitCode   *int
	signal     string
	httpStatus int
	class      string
	err        string
	output     string
	host       string // the host that ran it, on a fleet

	stored bool // its row exists
	dirty  bool // its row must be written

	// In the job queue: its rank (nanoseconds on the service's monotonic clock, priority
	// weighed in), its enqueue sequence and its heap index (-1: not queued).
	rank int64
	seq  uint64
	qidx int

	// While running: the run's context (until its worker starts) and its cancel.
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// slotKey is the run key of a job's slot: one task per (key, attempt) can exist (P24).
func slotKey(job string, slot time.Time) string {
	var c slotText
	return c.key(job, slot)
}

// slotText is a slot formatted as in a run key, kept for the next job of the pass at the
// same slot.
type slotText struct {
	slot time.Time
	text string
}

// key is slotKey(job, slot).
func (c *slotText) key(job string, slot time.Time) string {
	if c.text == "" || !c.slot.Equal(slot) {
		c.slot, c.text = slot, slot.UTC().Format(time.RFC3339Nano)
	}
	return job + "@" + c.text
}

// manualKey is the run key of a manual run: unique by a random suffix.
func manualKey(job string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return job + "!" + hex.EncodeToString(b[:])
}

// active reports whether t is queued or running.
func (t *task) active() bool { return t.state == api.TaskQueued || t.state == api.TaskRunning }

// info is what the action is told of t.
func (t *task) info(timeout time.Duration) RunInfo {
	return RunInfo{TaskID: t.id, Job: t.job, Kind: t.kind, Slot: t.slot, Due: t.due, Attempt: t.attempt,
		RunKey: t.runKey, Timeout: timeout}
}

// apply records an outcome's result on t (not its state).
func (t *task) apply(o outcome) {
	t.exitCode, t.signal, t.httpStatus = o.res.ExitCode, o.res.Signal, o.res.HTTPStatus
	t.output = preview(o.res.Output)
	t.err = o.err
	t.class = ""
	if o.failure() {
		t.class = o.class.String()
	}
}

// preview is the kept start of an action's output: at most MaxOutput bytes of valid UTF-8.
func preview(b []byte) string {
	if len(b) > MaxOutput {
		b = b[:MaxOutput]
	}
	return strings.ToValidUTF8(string(b), "")
}

// API is the task as the control API shows it.
func (t *task) API() api.Task {
	a := api.Task{ID: t.id, Job: t.job, Kind: t.kind, State: t.state, Reason: t.reason, RunKey: t.runKey,
		Attempt: t.attempt, DueAt: t.due, QueuedAt: t.queued, ExitCode: t.exitCode, Signal: t.signal,
		HTTPStatus: t.httpStatus, Class: t.class, Error: t.err, Output: t.output, Host: t.host}
	if !t.slot.IsZero() {
		s := t.slot
		a.Slot = &s
	}
	if !t.started.IsZero() {
		s := t.started
		a.StartedAt = &s
	}
	if !t.ended.IsZero() {
		e := t.ended
		a.EndedAt = &e
		if !t.started.IsZero() {
			a.DurationMS = t.ended.Sub(t.started).Milliseconds()
		}
	}
	return a
}

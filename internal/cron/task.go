package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// task is one run of a job as the service keeps it: every queued or running task, and
// ended ones until their state is committed.
type task struct {
	store.Task

	dirty bool // its row must be written

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
func (t *task) active() bool { return t.State == api.TaskQueued || t.State == api.TaskRunning }

// info is what the action is told of t.
func (t *task) info(timeout time.Duration) RunInfo {
	return RunInfo{TaskID: t.ID, Job: t.Job, Kind: t.Kind, Slot: t.Slot, Due: t.Due, Attempt: t.Attempt,
		RunKey: t.RunKey, Timeout: timeout}
}

// apply records an outcome's result on t (not its state).
func (t *task) apply(o outcome) {
	t.ExitCode, t.Signal, t.HTTPStatus = o.res.ExitCode, o.res.Signal, o.res.HTTPStatus
	t.Output = preview(o.res.Output)
	t.Err = o.err
	t.Class = ""
	if o.failure() {
		t.Class = o.class.String()
	}
}

// preview is the kept start of an action's output: at most MaxOutput bytes of valid UTF-8.
func preview(b []byte) string {
	if len(b) > MaxOutput {
		b = b[:MaxOutput]
	}
	return strings.ToValidUTF8(string(b), "")
}

package cron

import (
	"time"

	"github.com/schedd/schedd/internal/api"
)

// Observer is told what the service does, for metrics. Its functions run on the cron loop:
// they must be quick and must not call the service. Nil ones are skipped.
type Observer struct {
	// Ended is a task of a configured job that ended in a terminal state.
	Ended func(job string, state api.TaskState)
	// Late is how long after it was due a task started running.
	Late func(job string, late time.Duration)
}

func (o Observer) ended(job string, state api.TaskState) {
	if o.Ended != nil {
		o.Ended(job, state)
	}
}

func (o Observer) late(job string, late time.Duration) {
	if o.Late != nil {
		o.Late(job, late)
	}
}

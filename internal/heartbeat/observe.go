package heartbeat

import (
	"time"

	"github.com/schedd/schedd/internal/api"
)

// Observer is told what the service does, for metrics. Its functions may be called with
// the service's lock held: they must be quick and must not call the service. Nil ones are
// skipped.
type Observer struct {
	// Pulse is an agent's outcome: ran, skipped (busy, gated or disabled) or failed.
	Pulse func(agent string, status api.RunStatus)
	// Late is how long after its scheduled time a pulse started (busy ones are left out:
	// their retry counts).
	Late func(agent string, late time.Duration)
}

func (o Observer) pulse(agent string, status api.RunStatus) {
	if o.Pulse != nil {
		o.Pulse(agent, status)
	}
}

func (o Observer) late(agent string, late time.Duration) {
	if o.Late != nil {
		o.Late(agent, late)
	}
}

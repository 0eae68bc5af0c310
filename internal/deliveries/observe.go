package deliveries

import (
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// Observer is told what the service does, for metrics. Its functions must be quick and
// must not call the service; nil ones are skipped. Values are bounded: sink names come
// from the config, the rest from the fixed sets below.
type Observer struct {
	// Attempt is one send: result is delivered, failed, dead, not_ready, released (schedd
	// stopped mid-send) or unrecorded (the store lost the outcome); class is none,
	// transient, permanent or not_ready. sinceEnqueue is the entry's age when delivered.
	Attempt func(sink, result, class string, sinceEnqueue time.Duration)
	// DeadLetter is an entry dead-lettered: permanent, max_retries, expired or unknown_sink.
	DeadLetter func(reason string)
	// Pass is a recovery pass that ran (not a dry run).
	Pass func(api.RecoverySummary)
}

var attemptResults = map[outcome]string{
	outDelivered: "delivered", outFailed: "failed", outDead: "dead", outNotReady: "not_ready", outCanceled: "released",
}

// attempt reports a send of e that came to r.
func (o Observer) attempt(e store.Entry, r attemptResult) {
	result, ok := attemptResults[r.out]
	if !ok {
		result = "unrecorded"
	}
	class := r.class
	if class == "" {
		class = "none"
	}
	if o.Attempt != nil {
		var age time.Duration
		if r.out == outDelivered {
			age = time.Since(e.CreatedAt)
		}
		o.Attempt(e.Sink, result, class, age)
	}
	if r.out == outDead {
		reason := ReasonMaxRetries
		if class == Permanent.String() {
			reason = "permanent"
		}
		o.dead(reason)
	}
}

func (o Observer) dead(reason string) {
	if o.DeadLetter != nil {
		o.DeadLetter(reason)
	}
}

func (o Observer) pass(s api.RecoverySummary) {
	if o.Pass != nil {
		o.Pass(s)
	}
}

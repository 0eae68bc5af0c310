package deliveries

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// Attempt outcomes a scripted sink can return.
const (
	oOK        = "ok"
	oTransient = "transient"
	oPermanent = "permanent"      // a typed permanent error
	oPermText  = "permanent-text" // an untyped error matching an upstream pattern
	oNotReady  = "not-ready"      // typed not-ready after the claim: released, nothing charged
)

// modelResult is what the pure reference model predicts for one entry.
type modelResult struct {
	state    store.State
	attempts int
	failures int
	reason   string
	// gaps[i] is the wait between attempt i and attempt i+1, as bounds [lo, hi].
	gapLo, gapHi []time.Duration
}

// model is the reference model of an entry's life (P4, P6 in docs/scenarios.md): outcomes[i]
// answers attempt i+1 (success once they run out).
func model(maxRetries int, schedule []time.Duration, jitter float64, outcomes []string) modelResult {
	var r modelResult
	for i := 0; ; i++ {
		o := oOK
		if i < len(outcomes) {
			o = outcomes[i]
		}
		r.attempts++
		switch o {
		case oOK:
			r.state = store.StateDelivered
			return r
		case oPermanent, oPermText:
			r.state, r.reason = store.StateDead, "permanent error"
			return r
		case oNotReady:
			// Released due now; the runtime re-arms it no sooner than the floor.
			r.gapLo, r.gapHi = append(r.gapLo, RearmFloor), append(r.gapHi, RearmFloor)
		case oTransient:
			r.failures++
			if r.failures >= maxRetries {
				r.state, r.reason = store.StateDead, ReasonMaxRetries
				return r
			}
			d := schedule[min(r.failures, len(schedule)-1)] // P6: table[min(k, len-1)], written out independently
			// Downward jitter keeps the table an upper bound; stamps have millisecond precision.
			lo := d
			if jitter > 0 {
				lo = time.Duration(float64(d)*(1-jitter)) - time.Millisecond
			}
			r.gapLo, r.gapHi = append(r.gapLo, max(lo, RearmFloor)), append(r.gapHi, max(d, RearmFloor))
		}
	}
}

// P4 and P6 against the reference model: under any schedule of successes, transient,
// permanent and not-ready answers, an entry ends in exactly one terminal state — delivered,
// or dead after exactly max_retries failures, or dead at once on a permanent error — and
// each retry starts when the table says (exactly with jitter off, within the downward
// jitter band otherwise), never sooner than the re-arm floor.
func TestDeliveryModel_P4_P6(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		maxRetries := rapid.IntRange(1, 6).Draw(rt, "max_retries")
		secs := rapid.SliceOfN(rapid.SampledFrom([]int{0, 1, 5, 25, 120, 600}), 1, 5).Draw(rt, "schedule")
		schedule := make([]time.Duration, len(secs))
		for i, s := range secs {
			schedule[i] = time.Duration(s) * time.Second
		}
		jitter := rapid.SampledFrom([]float64{0, 0, 0.2, 1}).Draw(rt, "jitter")
		outcomes := rapid.SliceOfN(rapid.SampledFrom([]string{oOK, oTransient, oTransient, oTransient,
			oPermanent, oPermText, oNotReady}), 0, 12).Draw(rt, "outcomes")
		seed := rapid.Float64Range(0, 0.999).Draw(rt, "rand")

		var got store.Entry
		var sends []send
		synctest.Test(t, func(t *testing.T) {
			ds := storetest.NewMemory()
			sink := &fakeSink{script: func(d Delivery) error {
				o := oOK
				if d.Attempt-1 < len(outcomes) {
					o = outcomes[d.Attempt-1]
				}
				switch o {
				case oTransient:
					return TransientError(errors.New("HTTP 503"))
				case oPermanent:
					return PermanentError(errors.New("HTTP 404"))
				case oPermText:
					return errors.New("Forbidden: Bot Was Blocked By The User")
				case oNotReady:
					return NotReadyError(nil)
				}
				return nil
			}}
			cfg := productionConfig()
			cfg.MaxRetries, cfg.Schedule, cfg.Jitter = maxRetries, schedule, jitter
			s, err := New(cfg, ds, map[string]Sink{"hook": sink}, Deps{Rand: func() float64 { return seed }})
			if err != nil {
				t.Fatal(err)
			}
			stop := start(t, s)
			synctest.Wait()
			e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
			time.Sleep(48 * time.Hour)
			synctest.Wait()
			stop()
			got = mustGet(t, ds, e.ID)
			sends = sink.Sends()
		})
		want := model(maxRetries, schedule, jitter, outcomes)
		if !got.State.Terminal() || got.State != want.state {
			rt.Fatalf("state %s, model %s", got.State, want.state)
		}
		if got.Attempts != want.attempts || len(sends) != want.attempts {
			rt.Fatalf("attempts %d (sends %d), model %d", got.Attempts, len(sends), want.attempts)
		}
		if got.Failures != want.failures {
			rt.Fatalf("failures %d, model %d", got.Failures, want.failures)
		}
		if !strings.HasPrefix(got.DeadReason, want.reason) {
			rt.Fatalf("dead reason %q, model %q", got.DeadReason, want.reason)
		}
		for i := 1; i < len(sends); i++ {
			gap := sends[i].at.Sub(sends[i-1].at)
			if gap < want.gapLo[i-1] || gap > want.gapHi[i-1] {
				rt.Fatalf("attempt %d after %v, model [%v, %v]", i+1, gap, want.gapLo[i-1], want.gapHi[i-1])
			}
			if sends[i].key != "k" {
				rt.Fatalf("attempt %d with key %q", i+1, sends[i].key)
			}
		}
	})
}

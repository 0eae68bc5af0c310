package deliveries

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// TestObserver: each send reaches the observer with its result and class in their bounded
// forms (never the error text), a dead letter with its reason, and the pass with its summary.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		errs := map[string]error{
			"ok":   nil,
			"404":  &SendError{Class: Permanent, Err: errors.New("HTTP 404 Not Found"), Status: 404},
			"503":  &SendError{Class: Transient, Err: errors.New("HTTP 503"), Status: 503},
			"wait": NotReadyError(nil),
		}
		for k := range errs {
			putEntry(ds, store.Entry{Key: k, Sink: "hook", State: store.StatePending, CreatedAt: time.Now().Add(-time.Minute)})
		}
		putEntry(ds, store.Entry{Sink: "removed", State: store.StatePending})
		var mu sync.Mutex
		var got []string
		var ages []time.Duration
		var passes []api.RecoverySummary
		obs := Observer{
			Attempt: func(sink, result, class string, age time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, "attempt "+sink+" "+result+" "+class)
				if result == "delivered" {
					ages = append(ages, age)
				}
			},
			DeadLetter: func(reason string) { mu.Lock(); got = append(got, "dead "+reason); mu.Unlock() },
			Pass:       func(s api.RecoverySummary) { mu.Lock(); passes = append(passes, s); mu.Unlock() },
		}
		sink := &fakeSink{script: func(d Delivery) error { return errs[d.Key] }}
		s, err := New(parityConfig(), ds, map[string]Sink{"hook": sink}, Deps{Log: testLogger(t), Observe: obs})
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, s)
		time.Sleep(5 * time.Second) // the pass hands what its budget left to the runtime
		synctest.Wait()
		stop()
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(got)
		got = slices.Compact(got) // a not-ready sink is tried again every second
		want := []string{
			"attempt hook dead permanent", "attempt hook delivered none", "attempt hook failed transient",
			"attempt hook not_ready not_ready", "dead permanent", "dead unknown_sink",
		}
		if !slices.Equal(got, want) {
			t.Errorf("observed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(ages) != 1 || ages[0] < time.Minute {
			t.Errorf("delivered ages %v, want one of at least 1m", ages)
		}
		if len(passes) != 1 || passes[0].Scanned != 5 || passes[0].Total() != 5 {
			t.Errorf("passes %+v, want one that scanned 5", passes)
		}
	})
}

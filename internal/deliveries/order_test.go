package deliveries

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// streamKeys are the keys m001..m100 of one stream to one sink, in enqueue order.
func streamKeys() []string {
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("m%03d", i+1)
	}
	return keys
}

// sentKeys lists the keys of the sends a sink saw, in the order they were made.
func sentKeys(sink *fakeSink) []string {
	var keys []string
	for _, sd := range sink.Sends() {
		keys = append(keys, sd.key)
	}
	return keys
}

// R-DLV-08: what schedd keeps of one sink's order. With one worker and no failed send, a
// stream cut by a crash is sent in enqueue order across the restart: the recovery pass goes
// through what is left in id order, and the send the crash cut is made again in its place
// (its one duplicate, under the same key). A failed send is retried at its backoff while
// the entries after it go on, so from there the order is not kept: schedd promises
// at-least-once delivery, not order (with more workers, sends due together go at once).
func TestOrderAcrossRestart_RDLV08(t *testing.T) {
	t.Run("crash mid-stream, one worker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ds := storetest.NewMemory()
			cfg := parityConfig()
			cfg.Workers = 1
			var crashed atomic.Bool
			sink := &fakeSink{script: func(d Delivery) error {
				time.Sleep(100 * time.Millisecond)
				if d.Key == "m041" && !crashed.Swap(true) {
					// The process dies after this send: nothing it writes from now on lands.
					ds.SetWriteFault(func(string) error { return fmt.Errorf("%w: process killed", store.ErrStorage) })
				}
				return nil
			}}
			s1 := newService(t, cfg, ds, map[string]Sink{"hook": sink})
			stop := start(t, s1)
			synctest.Wait()
			keys := streamKeys()
			for _, k := range keys {
				enqueueReq(t, s1, Request{Sink: "hook", Key: k})
			}
			time.Sleep(time.Minute)
			stop()
			ds.SetWriteFault(nil)

			s2 := newService(t, cfg, ds, map[string]Sink{"hook": sink})
			stop = start(t, s2)
			defer stop()
			time.Sleep(time.Hour)
			synctest.Wait()
			want := slices.Concat(keys[:41], keys[40:])
			if got := sentKeys(sink); !slices.Equal(got, want) {
				t.Fatalf("sends across the restart:\n got %v\nwant %v", got, want)
			}
			if sum, _ := s2.LastRecovery(); sum.Interrupted != 1 || sum.Recovered != 59 {
				t.Fatalf("recovery summary = %+v", sum)
			}
		})
	})
	t.Run("a failed send goes after later entries", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ds := storetest.NewMemory()
			cfg := parityConfig()
			cfg.Workers = 1
			sink := &fakeSink{script: func(d Delivery) error {
				time.Sleep(100 * time.Millisecond)
				if d.Key == "m050" && d.Attempt == 1 {
					return TransientError(errBoom)
				}
				return nil
			}}
			s := newService(t, cfg, ds, map[string]Sink{"hook": sink})
			stop := start(t, s)
			defer stop()
			synctest.Wait()
			keys := streamKeys()
			for _, k := range keys {
				enqueueReq(t, s, Request{Sink: "hook", Key: k})
			}
			time.Sleep(time.Hour)
			synctest.Wait()
			want := slices.Concat(keys[:50], keys[50:], keys[49:50])
			if got := sentKeys(sink); !slices.Equal(got, want) {
				t.Fatalf("sends with a retry:\n got %v\nwant %v", got, want)
			}
		})
	})
}

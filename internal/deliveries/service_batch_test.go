package deliveries

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// A batch is checked entry by entry as single enqueues are (an unknown sink keeps out that
// entry only), goes to the store in one call, and every entry it created is armed and sent.
func TestEnqueueBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		res, err := s.EnqueueBatch(context.Background(), []Request{
			{Sink: "hook", Key: "a", Payload: []byte("1")},
			{Sink: "nope", Key: "b"},
			{Sink: "hook", Headers: map[string]string{"Idempotency-Key": "x"}},
			{Sink: "hook", Key: "a", Payload: []byte("1")},
			{Sink: "hook", Payload: []byte("2")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res[0].Created || !errors.Is(res[1].Err, ErrUnknownSink) || !errors.Is(res[2].Err, store.ErrInvalid) ||
			res[3].Created || res[3].Entry.ID != res[0].Entry.ID || !res[4].Created || !strings.HasPrefix(res[4].Entry.Key, "schedd-") {
			t.Fatalf("results = %+v", res)
		}
		if n := ds.Calls("enqueue_batch"); n != 1 {
			t.Fatalf("%d store calls, want one batch", n)
		}
		synctest.Wait()
		sent := map[string]bool{}
		for _, x := range sink.Sends() {
			sent[x.key] = true
		}
		if len(sink.Sends()) != 2 || !sent["a"] || !sent[res[4].Entry.Key] {
			t.Fatalf("sends = %+v, want a and the generated key", sink.Sends())
		}
		// A batch the store refuses as a whole returns its error, and the status keeps it.
		ds.SetWriteFault(func(string) error { return store.ErrDiskFull })
		if _, err := s.EnqueueBatch(context.Background(), []Request{{Sink: "hook"}}); !errors.Is(err, store.ErrDiskFull) {
			t.Fatalf("refused batch: %v", err)
		}
		if st, _ := s.Status(context.Background()); st.EnqueueError == nil {
			t.Fatal("the status does not show the refused batch")
		}
	})
}

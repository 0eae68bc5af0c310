package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/supervisor"
)

func addLines(r *supervisor.OutputRing, from, to int) {
	for i := from; i <= to; i++ {
		r.Add(api.LogLine{PID: 9, Stream: "stdout", Text: "l" + strconv.Itoa(i)})
	}
}

// describe is "l1 l2 missed=4 l7" for a list of events.
func describe(evs []api.LogEvent) string {
	var s []string
	for _, e := range evs {
		if e.Line != nil {
			s = append(s, e.Line.Text)
		} else {
			s = append(s, "missed="+strconv.FormatUint(e.Missed, 10))
		}
	}
	return strings.Join(s, " ")
}

// A follower stuck writing to its client never holds the ring up: lines keep being
// added meanwhile, and once it goes on it is told how many it missed, then gets the
// newest. Closing the ring ends it; so does its context.
func TestFollowOutputSlowReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ring := supervisor.NewOutputRing(4)
		addLines(ring, 1, 2)
		var mu sync.Mutex
		var got []api.LogEvent
		unblock := make(chan struct{})
		send := func(v any) error {
			if e := v.(api.LogEvent); e.Line != nil && e.Line.Seq == 1 {
				<-unblock // the client does not read
			}
			mu.Lock()
			got = append(got, v.(api.LogEvent))
			mu.Unlock()
			return nil
		}
		done := make(chan struct{})
		go func() { followOutput(context.Background(), ring, 1, send); close(done) }()
		synctest.Wait()
		addLines(ring, 3, 10) // would deadlock the bubble if Add waited for the follower
		close(unblock)
		synctest.Wait()
		mu.Lock()
		if d := describe(got); d != "l1 l2 missed=4 l7 l8 l9 l10" {
			t.Errorf("slow follower got %q", d)
		}
		mu.Unlock()
		ring.Close()
		<-done

		ctx, cancel := context.WithCancel(context.Background())
		done = make(chan struct{})
		go func() { followOutput(ctx, supervisor.NewOutputRing(4), 1, send); close(done) }()
		synctest.Wait()
		cancel()
		<-done
	})
}

func serveLogs(t *testing.T, ring *supervisor.OutputRing) *client.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "lg")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Backend: statusNone{}})
	srv.AddLogs(ring)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(served) }()
	cl := client.New(sock)
	t.Cleanup(func() { cl.Close(); ring.Close(); cancel(); <-served; os.RemoveAll(dir) })
	return cl
}

func TestLogsAPI(t *testing.T) {
	ring := supervisor.NewOutputRing(5)
	addLines(ring, 1, 7)
	ring.Add(api.LogLine{PID: 9, Stream: "stderr", Text: "capped", NotLogged: true})
	cl := serveLogs(t, ring)
	ctx := t.Context()

	var logs api.Logs
	if err := cl.Do(ctx, http.MethodGet, "/v1/logs?n=2", nil, &logs); err != nil {
		t.Fatal(err)
	}
	if len(logs.Lines) != 2 || logs.Lines[0].Text != "l7" || logs.Lines[1].Text != "capped" || !logs.Lines[1].NotLogged ||
		logs.KeepLines != 5 || logs.Total != 8 || logs.NotLogged != 1 {
		t.Fatalf("GET /v1/logs?n=2 = %+v", logs)
	}
	if err := cl.Do(ctx, http.MethodGet, "/v1/logs", nil, &logs); err != nil || len(logs.Lines) != 5 || logs.Lines[0].Text != "l4" {
		t.Fatalf("GET /v1/logs = %+v, %v", logs, err)
	}
	for q, want := range map[string]string{
		"n=-1": `n: want a number of lines (0 or more), got "-1"`, "n=x": `n: want a number of lines (0 or more), got "x"`,
		"follow=yes": `follow: want 1 or 0, got "yes"`,
	} {
		err := cl.Do(ctx, http.MethodGet, "/v1/logs?"+q, nil, nil)
		if ae := apiError(t, err); ae.Status != 400 || ae.Message != want {
			t.Errorf("?%s: %v", q, err)
		}
	}

	// follow: the last line kept, then a new one; closing the ring ends the stream.
	lines := make(chan api.LogEvent, 4)
	errc := make(chan error, 1)
	go func() {
		errc <- cl.Stream(ctx, "/v1/logs?n=1&follow=1", func(b []byte) error {
			var e api.LogEvent
			err := json.Unmarshal(b, &e)
			lines <- e
			return err
		})
	}()
	if e := <-lines; e.Line == nil || e.Line.Text != "capped" {
		t.Fatalf("first streamed event %+v", e)
	}
	ring.Add(api.LogLine{PID: 10, Stream: "stdout", Text: "new"})
	if e := <-lines; e.Line == nil || e.Line.Text != "new" || e.Line.PID != 10 || e.Line.Seq != 9 {
		t.Fatalf("followed event %+v", e)
	}
	ring.Close()
	if err := <-errc; err != nil {
		t.Fatalf("the stream did not end cleanly when the ring closed: %v", err)
	}
}

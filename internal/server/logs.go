package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/schedd/schedd/internal/api"
)

// Output is the gateway's recent output lines (supervisor.OutputRing): what `schedd logs`
// reads and follows.
type Output interface {
	// Last returns the last n lines and the sequence number of the next.
	Last(n int) ([]api.LogLine, uint64)
	// Since returns up to n lines from seq on, how many before them are gone, a channel
	// closed when there are more, and whether no more will come.
	Since(seq uint64, n int) (lines []api.LogLine, missed uint64, wait <-chan struct{}, closed bool)
	// Stats returns the number of lines kept, every line's count and those not logged.
	Stats() (size int, total, notLogged uint64)
}

// AddLogs adds GET /v1/logs, served from out.
func (s *Server) AddLogs(out Output) { s.HandleLong("GET /v1/logs", logsAPI{out}.logs) }

// logsAPI serves the gateway's output lines.
type logsAPI struct{ out Output }

// followBatch is how many lines a follower copies out of the ring at a time.
const followBatch = 256

// logs is GET /v1/logs?n=N[&follow=1]: the gateway's last n output lines (every kept
// line without n). With follow the reply is a stream of api.LogEvent lines: those lines,
// then each new one as it comes, until the client goes away or schedd stops.
func (a logsAPI) logs(w http.ResponseWriter, r *http.Request) {
	n, follow, err := logsQuery(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	lines, next := a.out.Last(n)
	if !follow {
		size, total, notLogged := a.out.Stats()
		WriteJSON(w, http.StatusOK, api.Logs{Lines: lines, KeepLines: size, Total: total, NotLogged: notLogged})
		return
	}
	s := NewStream(w)
	for i := range lines {
		if s.Send(api.LogEvent{Line: &lines[i]}) != nil {
			return
		}
	}
	followOutput(r.Context(), a.out, next, s.Send)
}

func logsQuery(r *http.Request) (n int, follow bool, err error) {
	q := r.URL.Query()
	n = math.MaxInt
	if v := q.Get("n"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return 0, false, fmt.Errorf("n: want a number of lines (0 or more), got %q", v)
		}
	}
	switch v := q.Get("follow"); v {
	case "", "0", "false":
	case "1", "true":
		follow = true
	default:
		return 0, false, fmt.Errorf("follow: want 1 or 0, got %q", v)
	}
	return n, follow, nil
}

// followOutput sends the ring's lines from seq on as they come, until ctx ends, the ring
// is closed or send fails (the client is gone). It never holds the ring up: a client too
// slow to keep within the ring's size gets a Missed event with the count instead.
func followOutput(ctx context.Context, ring Output, seq uint64, send func(any) error) {
	for {
		lines, missed, wait, closed := ring.Since(seq, followBatch)
		if missed > 0 {
			if send(api.LogEvent{Missed: missed}) != nil {
				return
			}
			seq += missed
		}
		for i := range lines {
			if send(api.LogEvent{Line: &lines[i]}) != nil {
				return
			}
			seq = lines[i].Seq + 1
		}
		switch {
		case len(lines) > 0:
		case closed:
			return
		default:
			select {
			case <-ctx.Done():
				return
			case <-wait:
			}
		}
	}
}

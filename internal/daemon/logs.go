package daemon

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/supervisor"
)

// followBatch is how many lines a follower copies out of the ring at a time.
const followBatch = 256

// apiLogs is GET /v1/logs?n=N[&follow=1]: the gateway's last n output lines (every kept
// line without n). With follow the reply is a stream of api.LogEvent lines: those lines,
// then each new one as it comes, until the client goes away or schedd stops.
func (d *Daemon) apiLogs(w http.ResponseWriter, r *http.Request) {
	n, follow, err := logsQuery(r)
	if err != nil {
		server.WriteError(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	lines, next := d.output.Last(n)
	if !follow {
		size, total, notLogged := d.output.Stats()
		server.WriteJSON(w, http.StatusOK, api.Logs{Lines: lines, KeepLines: size, Total: total, NotLogged: notLogged})
		return
	}
	s := server.NewStream(w)
	for i := range lines {
		if s.Send(api.LogEvent{Line: &lines[i]}) != nil {
			return
		}
	}
	followOutput(r.Context(), d.output, next, s.Send)
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
func followOutput(ctx context.Context, ring *supervisor.OutputRing, seq uint64, send func(any) error) {
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

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// progressEvery is how often a command that waits reads the status to say what it waits for.
const progressEvery = 500 * time.Millisecond

// isTerminal reports whether w is a terminal: progress lines are for people, and a pipe or
// a file gets only the final, script-friendly output.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// watchRestart says on w, as it happens, what a `restart --wait` waits for: the delay, the
// gateway to be idle (and what keeps it busy), the stop, the start, ready. It reads the
// status every progressEvery until ctx ends, and writes a line only when the step changes.
func watchRestart(ctx context.Context, w io.Writer, status func(context.Context) (api.Status, error)) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	last := ""
	var started bool // the restart was seen pending or in progress
	for {
		if st, err := status(ctx); err == nil {
			if line := restartStep(st, &started, time.Now()); line != "" && line != last {
				fmt.Fprintln(w, line)
				last = line
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// restartStep is one line saying where a restart stands in st, or "" when there is nothing
// to say (no restart seen yet, or the one seen is over: the final reply says how it ended).
func restartStep(st api.Status, started *bool, now time.Time) string {
	r := st.Restart
	if r == nil {
		return ""
	}
	gw := st.Gateway
	switch p := r.Pending; {
	case r.InProgress:
		*started = true
		switch gw.State {
		case api.GatewayStopping:
			return fmt.Sprintf("stopping the gateway (pid %d)", gw.PID)
		case api.GatewayStarting:
			if gw.PID != 0 {
				return fmt.Sprintf("starting the gateway (pid %d), waiting for it to be ready", gw.PID)
			}
			return "starting the gateway"
		case api.GatewayReady:
			return fmt.Sprintf("the gateway is ready (pid %d)", gw.PID)
		default:
			return "restarting: the gateway is " + string(gw.State)
		}
	case p != nil:
		*started = true
		switch {
		case p.FollowUp:
			return "waiting for the restart in progress to end"
		case p.DeferredSince != nil:
			line := "waiting for the gateway to be idle"
			var busy []string
			if p.Inflight != nil {
				busy = append(busy, fmt.Sprintf("%d in flight", *p.Inflight))
			}
			if d := p.IdleDetail; d != nil && len(d.Blockers) > 0 {
				busy = append(busy, strings.Join(d.Blockers, ", "))
			}
			if p.IdleError != "" {
				busy = append(busy, "idle check failed: "+p.IdleError)
			}
			if len(busy) > 0 {
				line += " (" + strings.Join(busy, "; ") + ")"
			}
			if p.DeadlineAt != nil {
				line += fmt.Sprintf(", forced at %s", p.DeadlineAt.Local().Format(time.TimeOnly))
			}
			return line
		case p.DueAt.After(now):
			return fmt.Sprintf("waiting for the restart delay and cooldown, until %s", p.DueAt.Local().Format(time.TimeOnly))
		default:
			return "restart due now"
		}
	case *started && gw.State == api.GatewayReady:
		return fmt.Sprintf("the gateway is ready (pid %d)", gw.PID)
	}
	return ""
}

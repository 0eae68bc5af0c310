package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/spf13/cobra"
)

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show what schedd and the gateway are doing",
		Long: `Show the daemon and the gateway: state, pid, uptime, restarts, the last exit and,
while it waits to restart a failed gateway, when the next start is due; then the
heartbeats, the deliveries and the cron jobs in short.

  schedd status          # a table for people
  schedd status --json   # the full status document for scripts`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			cl := g.client()
			defer cl.Close()
			if asJSON {
				raw, err := cl.StatusRaw(ctx)
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), raw)
			}
			st, err := cl.Status(ctx)
			if err != nil {
				return err
			}
			printStatus(cmd.OutOrStdout(), st, time.Now())
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the full status as JSON")
	return c
}

// printStatus writes the human table of a status document.
func printStatus(w io.Writer, st api.Status, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	s := st.Schedd
	row := func(k string, v ...string) { fmt.Fprintf(tw, "%s\t%s\n", safe(k), safe(strings.Join(v, "  "))) }
	row("schedd", fmt.Sprintf("pid %d", s.PID), "version "+s.Version, "up "+since(s.StartedAt, now), "service manager "+s.ServiceManager)
	cfg := s.ConfigPath
	if cfg == "" {
		cfg = "(built-in defaults)"
	}
	row("config", cfg)
	gw := st.Gateway
	line := []string{string(gw.State)}
	if gw.PID != 0 {
		line = append(line, fmt.Sprintf("pid %d", gw.PID))
	}
	switch gw.State {
	case api.GatewayReady:
		if !gw.ReadySince.IsZero() {
			line = append(line, "ready for "+since(gw.ReadySince, now))
		}
	case api.GatewayStarting:
		if !gw.StartedAt.IsZero() {
			line = append(line, "starting for "+since(gw.StartedAt, now))
		}
	case api.GatewayBackoff, api.GatewayCrashLooping, api.GatewayFailed, api.GatewayStopped:
		if !gw.DownSince.IsZero() {
			line = append(line, "down for "+since(gw.DownSince, now), "since "+clock(gw.DownSince, now))
		}
	}
	row("gateway", line...)
	row("restarts", strconv.Itoa(gw.Restarts), fmt.Sprintf("consecutive failures %d", gw.ConsecutiveFailures))
	if !gw.NextStartAt.IsZero() {
		row("next start", "in "+until(gw.NextStartAt, now), "at "+gw.NextStartAt.Local().Format(time.TimeOnly))
	}
	if e := gw.LastExit; e != nil {
		what := string(e.Reason)
		switch {
		case e.Signal != "":
			what += " (" + e.Signal + ")"
		case e.Code != nil:
			what += fmt.Sprintf(" (code %d)", *e.Code)
		}
		v := []string{what, since(e.At, now) + " ago"}
		if e.Error != "" {
			v = append(v, e.Error)
		}
		row("last exit", v...)
		if gw.State == api.GatewayFailed {
			row("", "not restarted: a no-restart exit code; schedd restart or a config reload starts it")
		}
		for _, l := range e.Output {
			row("", "| "+l)
		}
	}
	if gw.StatusText != "" {
		row("gateway says", gw.StatusText)
	}
	if gw.Inflight != nil {
		row("in flight", strconv.Itoa(*gw.Inflight))
	}
	if rs := st.Restart; rs != nil {
		if p := rs.Pending; p != nil {
			v := []string{strings.Join(p.Reasons, "; ")}
			switch {
			case p.FollowUp:
				v = append(v, "after the restart in progress")
			case p.DeferredSince != nil:
				busy := "busy"
				if p.Inflight != nil {
					busy = fmt.Sprintf("%d in flight", *p.Inflight)
				}
				v = append(v, "waiting for idle for "+since(*p.DeferredSince, now), busy, "forced in "+until(*p.DeadlineAt, now))
			default:
				v = append(v, "due in "+until(p.DueAt, now))
			}
			if p.Requests > 1 {
				v = append(v, fmt.Sprintf("%d requests", p.Requests))
			}
			row("restart pending", v...)
		}
		if rs.InProgress {
			row("restart", "in progress")
		}
		if l := rs.Last; l != nil {
			v := []string{"ok", fmt.Sprintf("pid %d -> %d", l.PreviousPID, l.PID)}
			if inProcess(*l) {
				v[1] = fmt.Sprintf("pid %d, restarted in process", l.PID)
			}
			if !l.OK {
				v = []string{"failed", l.Error}
			}
			v = append(v, since(l.At, now)+" ago", l.Reason)
			if l.Forced {
				v = append(v, "forced")
			}
			row("last restart", v...)
		}
	}
	printHeartbeatSummary(row, st.Heartbeat, now)
	printDeliveriesSummary(row, st.Deliveries, now)
	printCronSummary(row, st.Cron, now)
	tw.Flush()
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return roundDur(now.Sub(t)).String()
}

// clock is the local time of day of t, with the date when t is a day or more from now.
func clock(t, now time.Time) string {
	layout := time.TimeOnly
	if d := now.Sub(t); d >= 24*time.Hour || d <= -24*time.Hour {
		layout = "Jan 2 15:04:05"
	}
	return t.Local().Format(layout)
}

func until(t, now time.Time) string {
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	return roundDur(d).String()
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

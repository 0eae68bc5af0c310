package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

func newHeartbeatCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "heartbeat",
		Short: "Show heartbeat schedules, switch heartbeats on or off, or ask for one now",
		Long: `Heartbeats pulse each agent's target on a schedule (heartbeat.* in the config): an
HTTP POST or a command, with the pulse as JSON. schedd decides when and whether; the
gateway's handler does the work. These commands talk to the running daemon.

  schedd heartbeat status                  # per agent: interval, next due, last result
  schedd heartbeat wake                    # every agent, now (after 250ms of coalescing)
  schedd heartbeat wake --agent ops --reason deploy
  schedd heartbeat disable                 # no pulses until enable, across daemon restarts
  schedd heartbeat enable`,
	}
	group(c)
	c.AddCommand(newHeartbeatStatusCmd(g), newHeartbeatSwitchCmd(g, true), newHeartbeatSwitchCmd(g, false), newHeartbeatWakeCmd(g))
	return c
}

func newHeartbeatStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the switch and every agent: interval, next due, last result",
		Long: `Show the global switch and every configured agent: whether it runs (and why not),
its interval, when it is next due and how its last heartbeat went: ran, skipped
with the reason (quiet-hours, requests-in-flight, gateway-not-ready, alerts-disabled,
min-spacing, flood, in-progress, disabled) or failed with the cause. The event a
target reported (sent, ok-empty, ok-token, skipped, failed) is shown too.

  schedd heartbeat status
  schedd heartbeat status --json   # the heartbeat block of schedd status --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			cl := g.client()
			defer cl.Close()
			raw, err := cl.StatusRaw(ctx)
			if err != nil {
				return err
			}
			var doc struct {
				Heartbeat json.RawMessage `json:"heartbeat"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				return fmt.Errorf("decode status: %w", err)
			}
			if len(doc.Heartbeat) == 0 || string(doc.Heartbeat) == "null" {
				return errors.New("the daemon reports no heartbeat block (is it an older schedd?)")
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, doc.Heartbeat)
			}
			var st api.Heartbeat
			if err := json.Unmarshal(doc.Heartbeat, &st); err != nil {
				return fmt.Errorf("decode status: %w", err)
			}
			printHeartbeat(out, st, time.Now())
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the heartbeat block as JSON")
	return c
}

func newHeartbeatSwitchCmd(g *globals, on bool) *cobra.Command {
	use, short, long := "enable", "Switch every heartbeat on", `Switch every heartbeat on again. Agents keep their schedule: each runs at its next
slot, not at once. The switch is saved in the state dir and survives daemon restarts;
heartbeat.enabled in the config only sets it until the first enable or disable.`
	if !on {
		use, short, long = "disable", "Switch every heartbeat off (saved across daemon restarts)", `Switch every heartbeat off: no agent is pulsed, and wakes are skipped as
"disabled", until schedd heartbeat enable. The switch is saved in the state dir
before the command returns, so a daemon restart keeps heartbeats off.`
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reply, err := call(cmd, g, 10*time.Second, func(ctx context.Context, cl *client.Client) (api.HeartbeatEnabledReply, error) {
				return cl.SetHeartbeatEnabled(ctx, on)
			})
			if err != nil {
				return err
			}
			state := "enabled"
			if !reply.Enabled {
				state = "disabled"
			}
			if reply.Changed {
				fmt.Fprintf(cmd.OutOrStdout(), "heartbeats %s\n", state)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "heartbeats were already %s\n", state)
			}
			return nil
		},
	}
}

func newHeartbeatWakeCmd(g *globals) *cobra.Command {
	var req api.HeartbeatWakeRequest
	c := &cobra.Command{
		Use:   "wake [--agent ID] [--session KEY] [--reason R]",
		Short: "Ask for a heartbeat now (every agent, or one)",
		Long: `Ask for a heartbeat now. The wake waits 250ms for others to merge with it (one
pulse per agent and session, the most urgent reason wins), then passes the same gates
as a scheduled one: the switch, active hours, a busy or unready gateway, visibility.

The default reason, manual, is exempt from the cooldown gate (30s between event
wakes, at most 5 runs a minute). Other reasons are classified as upstream does:
exec-event, hook:*, cron:*, wake; anything else is "other".

  schedd heartbeat wake                          # every agent that runs
  schedd heartbeat wake --agent ops              # one agent
  schedd heartbeat wake --session agent:ops:main # the agent the session key names
  schedd heartbeat wake --reason hook:deploy     # subject to the cooldown gate`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reply, err := call(cmd, g, 10*time.Second, func(ctx context.Context, cl *client.Client) (api.HeartbeatWakeReply, error) {
				return cl.HeartbeatWake(ctx, req)
			})
			if err != nil {
				return err
			}
			who := "every agent"
			switch {
			case reply.Agent != "":
				who = "agent " + reply.Agent
			case reply.Session != "":
				who = "session " + reply.Session
			}
			reason := reply.Reason
			if string(reply.ReasonKind) != reply.Reason {
				reason += ", kind " + string(reply.ReasonKind)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "heartbeat wake for %s (reason %s): runs in %dms unless a gate skips it; see `schedd heartbeat status`\n",
				safe(who), safe(reason), reply.CoalesceMS)
			if !reply.Enabled {
				fmt.Fprintln(cmd.ErrOrStderr(), "note: heartbeats are disabled, so the wake will be skipped (schedd heartbeat enable)")
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&req.Agent, "agent", "", "wake only this agent `ID` (default: every agent)")
	f.StringVar(&req.Session, "session", "", "the session `KEY` the run uses (agent:<id>:... also names the agent)")
	f.StringVar(&req.Reason, "reason", "manual", "why: sent to the target as its `REASON`; manual skips the cooldown gate")
	return c
}

// printHeartbeat writes the table of `schedd heartbeat status`.
func printHeartbeat(w io.Writer, st api.Heartbeat, now time.Time) {
	state := "enabled"
	if !st.Enabled {
		state = "disabled (schedd heartbeat enable)"
	}
	fmt.Fprintf(w, "heartbeats %s\n", state)
	if len(st.Agents) == 0 {
		fmt.Fprintln(w, "no agents")
		return
	}
	events := false
	for _, a := range st.Agents {
		events = events || a.Event != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "AGENT\tEVERY\tNEXT DUE\tLAST"
	if events {
		header += "\tEVENT"
	}
	fmt.Fprintln(tw, header)
	for _, a := range st.Agents {
		every, next := "-", "not running: "+a.DisabledReason
		if a.Enabled {
			every = a.Every
			next = nextDue(a.NextDueAt, now)
		}
		line := []string{a.ID, every, next, lastRun(a.Last, now)}
		if events {
			line = append(line, eventText(a.Event))
		}
		for i := range line {
			line[i] = safe(line[i])
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	tw.Flush()
}

// printHeartbeatSummary adds the heartbeat lines to `schedd status`: the switch, how many
// agents run, and the first few of them.
func printHeartbeatSummary(row func(string, ...string), hb *api.Heartbeat, now time.Time) {
	if hb == nil {
		return
	}
	running := 0
	for _, a := range hb.Agents {
		if a.Enabled {
			running++
		}
	}
	state := "enabled"
	if !hb.Enabled {
		state = "disabled"
	}
	switch {
	case hb.NoAgentsConfigured && running == 0:
		row("heartbeat", state, "no agent configured")
	default:
		row("heartbeat", state, fmt.Sprintf("%d of %d agents run", running, len(hb.Agents)))
	}
	const show = 5
	shown := 0
	for _, a := range hb.Agents {
		if !a.Enabled {
			continue
		}
		if shown == show {
			row("", fmt.Sprintf("... %d more: schedd heartbeat status", running-show))
			break
		}
		row("  "+a.ID, "next "+nextDue(a.NextDueAt, now), "last "+lastRun(a.Last, now))
		shown++
	}
}

func nextDue(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	if !t.After(now) {
		return "now"
	}
	layout := time.TimeOnly
	if t.Sub(now) >= 24*time.Hour {
		layout = "Jan 2 15:04:05"
	}
	return "in " + until(*t, now) + " (" + t.Local().Format(layout) + ")"
}

func lastRun(l *api.HeartbeatRun, now time.Time) string {
	if l == nil {
		return "never"
	}
	s := string(l.Status) + " " + since(l.At, now) + " ago"
	switch {
	case l.Status == api.RunRan:
		s += fmt.Sprintf(" in %s", time.Duration(l.DurationMS)*time.Millisecond)
	case l.Reason != "":
		s += ": " + l.Reason
	}
	return s
}

func eventText(ev *api.HeartbeatEvent) string {
	if ev == nil {
		return "-"
	}
	s := ev.Status
	if ev.Indicator != "" {
		s += " [" + ev.Indicator + "]"
	}
	if ev.Preview != "" {
		p := strings.Join(strings.Fields(ev.Preview), " ")
		if len([]rune(p)) > 40 {
			p = string([]rune(p)[:39]) + "…"
		}
		s += " " + p
	}
	if ev.Reason != "" {
		s += " (" + ev.Reason + ")"
	}
	return s
}

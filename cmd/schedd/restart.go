package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/spf13/cobra"
)

type restartOptions struct {
	*globals
	reason  string
	now     bool
	wait    bool
	maxWait time.Duration
	delay   time.Duration
	json    bool
	daemon  bool
	method  string
}

func newRestartCmd(g *globals) *cobra.Command {
	o := &restartOptions{globals: g}
	c := &cobra.Command{
		Use:   "restart",
		Short: "Restart the gateway (a fresh pid), once it is idle",
		Long: `Ask the daemon to restart the gateway. The request joins the restart already
pending, if any; the restart waits restart.delay (2s) plus what is left of the
cooldown since the last one (30s), and, when an idle probe is configured, until the
gateway is idle or --max-wait (restart.defer_until_idle.max_wait, 5m) has passed.

  schedd restart                       # requested; returns at once
  schedd restart --reason deploy --wait   # wait for the result; exit 1 if it failed
                                       # (on a terminal, each step is shown as it happens)
  schedd restart --now --wait          # no delay, no cooldown, no waiting for idle
  schedd restart --method respawn      # a fresh process this time (say, after an upgrade),
                                       # when restart.method is signal
  schedd restart --daemon              # replace schedd itself with a fresh process

Exit status: 0 requested (or, with --wait, done), 1 failed, 2 usage.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := c.Flags()
	f.StringVar(&o.reason, "reason", "", "why, shown in status and logs (default \"cli\")")
	f.BoolVar(&o.now, "now", false, "skip the delay, the cooldown and the wait for idle")
	f.BoolVar(&o.wait, "wait", false, "wait until the restart is done and print its result")
	f.DurationVar(&o.maxWait, "max-wait", 0, "restart anyway after waiting this long for idle (default from the config)")
	f.DurationVar(&o.delay, "delay", -1, "wait this long before restarting, 0s to 60s (default restart.delay)")
	f.StringVar(&o.method, "method", "", "respawn (stop, start a fresh process) or signal (restart in process); default restart.method")
	f.BoolVar(&o.json, "json", false, "print the reply as JSON")
	f.BoolVar(&o.daemon, "daemon", false, "restart schedd itself (the gateway is stopped and started again by the new schedd)")
	c.Flags().Lookup("delay").DefValue = "from the config"
	return c
}

func (o *restartOptions) run(cmd *cobra.Command) error {
	if o.maxWait < 0 {
		return usageError{fmt.Errorf("--max-wait %v: must be positive", o.maxWait)}
	}
	if o.delay > api.MaxRestartDelay {
		return usageError{fmt.Errorf("--delay %v: at most %v", o.delay, api.MaxRestartDelay)}
	}
	switch o.method {
	case "", api.RestartMethodRespawn, api.RestartMethodSignal:
	default:
		return usageError{fmt.Errorf("--method %q: want respawn or signal", o.method)}
	}
	if o.daemon && o.method != "" {
		return usageError{errors.New("--method applies to the gateway, not to --daemon")}
	}
	req := api.RestartRequest{Reason: o.reason, Now: o.now, Wait: o.wait, Source: string(api.SourceCLI),
		Daemon: o.daemon, Method: o.method}
	if o.maxWait > 0 {
		req.MaxWait = o.maxWait.String()
	}
	if o.delay >= 0 {
		req.Delay = o.delay.String()
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if o.wait {
		// No deadline: the restart may wait for idle for minutes. ^C stops waiting (the
		// restart still happens).
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	cl := o.client()
	defer cl.Close()
	stopWatch := func() {}
	if o.wait && !o.json && isTerminal(cmd.ErrOrStderr()) {
		// On a terminal, say what the restart waits for as it happens; a script sees only
		// the result.
		watchCtx, cancel := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); watchRestart(watchCtx, cmd.ErrOrStderr(), cl.Status) }()
		stopWatch = func() { cancel(); <-watched }
	}
	reply, err := cl.Restart(ctx, req)
	stopWatch()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("stopped waiting; the restart goes on (see `schedd status`)")
		}
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		if err := writeJSON(out, reply); err != nil {
			return err
		}
	} else {
		printRestartReply(out, reply, time.Now())
	}
	if reply.Result != nil && !reply.Result.OK {
		return withCode(exitFailure, fmt.Errorf("restart failed: %s", reply.Result.Error))
	}
	if reply.Daemon != nil && reply.Daemon.Mode == "failed" {
		return withCode(exitFailure, fmt.Errorf("schedd cannot replace itself: %s", reply.Daemon.Detail))
	}
	return nil
}

func printRestartReply(w io.Writer, r api.RestartReply, now time.Time) {
	switch {
	case r.Daemon != nil:
		fmt.Fprintf(w, "schedd restart: mode %s", safe(r.Daemon.Mode))
		if r.Daemon.PID != 0 {
			fmt.Fprintf(w, ", new pid %d", r.Daemon.PID)
		}
		if r.Daemon.Detail != "" {
			fmt.Fprintf(w, " (%s)", safe(r.Daemon.Detail))
		}
		fmt.Fprintln(w)
	case r.Result != nil:
		res := r.Result
		if !res.OK {
			fmt.Fprintf(w, "restart failed after %s: %s\n", time.Duration(res.DurationMs)*time.Millisecond, safe(res.Error))
			return
		}
		var notes []string
		if res.DeferredMs > 0 {
			notes = append(notes, fmt.Sprintf("waited %s for idle", time.Duration(res.DeferredMs)*time.Millisecond))
		}
		if res.Forced {
			notes = append(notes, "forced at max-wait")
		}
		if res.CooldownMsApplied > 0 {
			notes = append(notes, fmt.Sprintf("cooldown %s", time.Duration(res.CooldownMsApplied)*time.Millisecond))
		}
		if res.Requests > 1 {
			notes = append(notes, fmt.Sprintf("%d requests merged", res.Requests))
		}
		if inProcess(*res) {
			fmt.Fprintf(w, "restarted in process (%s): pid %d, ready in %s", safe(res.Method), res.PID, time.Duration(res.DurationMs)*time.Millisecond)
		} else {
			fmt.Fprintf(w, "restarted: pid %d -> %d, ready in %s", res.PreviousPID, res.PID, time.Duration(res.DurationMs)*time.Millisecond)
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	case r.Pending != nil:
		p := r.Pending
		what := "restart requested"
		if r.Coalesced {
			what = fmt.Sprintf("merged into the pending restart (%d requests)", p.Requests)
		}
		switch {
		case p.FollowUp:
			fmt.Fprintf(w, "%s: it follows the restart in progress\n", what)
		case !p.DueAt.After(now):
			fmt.Fprintf(w, "%s: now\n", what)
		default:
			fmt.Fprintf(w, "%s: due in %s\n", what, p.DueAt.Sub(now).Round(time.Millisecond))
		}
	}
}

// inProcess reports a restart that kept the gateway's pid (method signal): no fresh pid.
func inProcess(r api.RestartResult) bool {
	return r.Method == api.RestartMethodSignal && r.PID != 0 && r.PID == r.PreviousPID
}

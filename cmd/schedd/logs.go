package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// logTime is how `schedd logs` prints a line's time: local, to the millisecond.
const logTime = "2006-01-02T15:04:05.000Z07:00"

func newLogsCmd(g *globals) *cobra.Command {
	var follow, asJSON bool
	var n int
	c := &cobra.Command{
		Use:   "logs [-f] [-n N] [--json]",
		Short: "Print the gateway's latest output lines; -f follows new ones",
		Long: `Print the latest lines the gateway wrote to its stdout and stderr, oldest first, as
TIME PID STREAM TEXT:

  2026-12-01T16:12:51.123+01:00 4242 stderr listening on 127.0.0.1:18789

schedd keeps the last gateway.output.keep_lines lines (default 1000) in memory, from
every gateway process since schedd started: a restart shows as a new pid. Lines over
gateway.output.max_lines_per_second are kept here though schedd's own log left them
out; a line over 4 KiB is cut and ends in " [cut]". schedd's own messages are not
here: they are in its log (journalctl -u schedd, or its stderr).

  schedd logs                # the last 100 lines
  schedd logs -n 20          # the last 20
  schedd logs -f             # the last 100, then new lines as they come, until ^C
  schedd logs -f -n 0        # only the lines written from now on
  schedd logs --json | jq -r 'select(.stream == "stderr") | .text'

--json prints one JSON object per line: seq, time, pid, stream, text, and truncated
or not_logged when true. A follower too slow to keep up (a paused terminal, a slow
pipe) never slows the gateway down: it skips the lines the ring dropped meanwhile and
says how many on stderr. -f ends with exit 0 on ^C or when schedd stops.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 0 {
				return usageError{fmt.Errorf("-n %d: want a number of lines, 0 or more", n)}
			}
			p := &logPrinter{out: cmd.OutOrStdout(), json: asJSON}
			if !follow {
				logs, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.Logs, error) {
					return cl.Logs(ctx, n)
				})
				if err != nil {
					return err
				}
				for _, l := range logs.Lines {
					if err := p.line(l); err != nil {
						return err
					}
				}
				return nil
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			cl := g.client()
			defer cl.Close()
			stderr := cmd.ErrOrStderr()
			err := cl.FollowLogs(ctx, n, func(e api.LogEvent) error {
				if e.Missed > 0 {
					fmt.Fprintf(stderr, "schedd logs: %d lines missed (this reader fell behind)\n", e.Missed)
				}
				if e.Line == nil {
					return nil
				}
				return p.line(*e.Line)
			})
			switch {
			case ctx.Err() != nil && errors.Is(err, context.Canceled):
				return nil // ^C
			case err == nil:
				fmt.Fprintln(stderr, "schedd logs: schedd stopped")
			}
			return err
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "after the last lines, print new ones as they come, until ^C")
	c.Flags().IntVarP(&n, "lines", "n", 100, "print the last `N` lines")
	c.Flags().BoolVar(&asJSON, "json", false, "print each line as a JSON object")
	return c
}

// logPrinter prints output lines as text or as JSON lines.
type logPrinter struct {
	out  io.Writer
	json bool
}

func (p *logPrinter) line(l api.LogLine) error {
	if p.json {
		return json.NewEncoder(p.out).Encode(l)
	}
	cut := ""
	if l.Truncated {
		cut = " [cut]"
	}
	_, err := fmt.Fprintf(p.out, "%s %d %s %s%s\n", l.Time.Local().Format(logTime), l.PID, safe(l.Stream), safeText(l.Text), cut)
	return err
}

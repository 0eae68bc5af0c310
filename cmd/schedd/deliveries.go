package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

func newDeliveriesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "deliveries",
		Short: "Enqueue durable deliveries, list them, retry or drop them",
		Long: `A delivery is a payload schedd must hand to a sink (deliveries.sinks in the config:
an HTTP endpoint, a command, or the gateway). schedd stores it durably before it
answers, sends it with its idempotency key, retries transient failures on the
retry table and dead-letters it with a reason when it cannot be delivered. Every
entry is pending, sending, delivered or dead.

  schedd deliveries enqueue --sink webhook --data '{"text": "hi"}'
  schedd deliveries list --state dead      # dead letters with their reasons
  schedd deliveries show 42                # one entry, with its payload
  schedd deliveries retry 42               # a dead letter back to pending
  schedd deliveries drop 42                # delete a pending entry or a dead letter
  schedd deliveries purge --dead --older-than 168h
  schedd deliveries recover --dry-run      # what a recovery pass would do now`,
	}
	group(c)
	c.AddCommand(newDeliveriesEnqueueCmd(g), newDeliveriesListCmd(g), newDeliveriesShowCmd(g),
		newDeliveriesRetryCmd(g), newDeliveriesDropCmd(g), newDeliveriesPurgeCmd(g), newDeliveriesRecoverCmd(g))
	return c
}

type enqueueOptions struct {
	sink     string
	key      string
	headers  []string
	priority int
	ttl      time.Duration
	data     string
	json     bool
}

func newDeliveriesEnqueueCmd(g *globals) *cobra.Command {
	o := &enqueueOptions{}
	c := &cobra.Command{
		Use:   "enqueue --sink NAME --data @FILE|-|TEXT [--key KEY] [--header K=V]... [--priority N]",
		Short: "Store a delivery durably; it is sent with its idempotency key",
		Long: `Store a delivery for a sink. The command returns once the entry is durable (on
disk, synced): from then on schedd delivers it at least once, across crashes, or
dead-letters it with a reason. The idempotency key travels with every attempt (as
the Idempotency-Key header, or SCHEDD_IDEMPOTENCY_KEY for exec sinks); enqueueing a
key that schedd already holds returns that entry and stores nothing new.

  schedd deliveries enqueue --sink webhook --data '{"text": "deploy done"}'
  schedd deliveries enqueue --sink webhook --data @event.json --key deploy-2026-11-30
  some-command | schedd deliveries enqueue --sink script --data -
  schedd deliveries enqueue --sink webhook --header Authorization="Bearer $TOKEN" --data @msg.json

--data takes the payload as text, @FILE for a file, or - for standard input (bytes
that are not UTF-8 go as data_base64). A --key is text of at most 255 bytes: not blank,
no control characters, no white space at either end.
Header values are secrets: schedd never prints them, here or in list, show or logs.
A lower --priority is sent first (default 0).

Exit status: 0 stored (or already stored under the key), 1 refused (the reason is
printed: unknown sink, payload over deliveries.max_payload, queue or disk full), 2 usage.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, g) },
	}
	f := c.Flags()
	f.StringVar(&o.sink, "sink", "", "the sink `NAME` (a key of deliveries.sinks); required")
	f.StringVar(&o.data, "data", "", "the payload: `TEXT`, @FILE, or - for standard input; required")
	f.StringVar(&o.key, "key", "", "idempotency `KEY` (default: schedd makes one)")
	f.StringArrayVar(&o.headers, "header", nil, "a header `K=V` to send with it (repeatable; the value is never printed)")
	f.IntVar(&o.priority, "priority", 0, "lower is sent first")
	f.DurationVar(&o.ttl, "ttl", 0, "dead-letter it unsent if not delivered within this `DURATION` (default deliveries.ttl)")
	f.BoolVar(&o.json, "json", false, "print the reply as JSON")
	return c
}

func (o *enqueueOptions) run(cmd *cobra.Command, g *globals) error {
	if o.sink == "" {
		return usageError{errors.New("--sink is required (a name from deliveries.sinks)")}
	}
	if !cmd.Flags().Changed("data") {
		return usageError{errors.New("--data is required: the payload as text, @FILE, or - for standard input")}
	}
	if o.ttl < 0 {
		return usageError{fmt.Errorf("--ttl %v: must be positive", o.ttl)}
	}
	if p := api.KeyProblem(o.key); p != "" {
		return usageError{fmt.Errorf("--key: %s", p)}
	}
	payload, err := readPayload(o.data, cmd.InOrStdin())
	if err != nil {
		return err
	}
	headers, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	req := api.DeliveryRequest{Sink: o.sink, Key: o.key, Headers: headers, Priority: o.priority}
	setPayload(&req, payload)
	if o.ttl > 0 {
		req.TTL = o.ttl.String()
	}
	reply, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.EnqueueReply, error) {
		return cl.Enqueue(ctx, req)
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		return writeJSON(out, reply)
	}
	if reply.Created {
		fmt.Fprintf(out, "delivery %d stored for %s (key %s)\n", reply.ID, safe(reply.Sink), safe(reply.Key))
	} else {
		fmt.Fprintf(out, "already stored under key %s: delivery %d, %s\n", safe(reply.Key), reply.ID, safe(string(reply.State)))
	}
	return nil
}

// readPayload reads --data: @FILE, - (stdin) or the text itself.
func readPayload(data string, stdin io.Reader) ([]byte, error) {
	switch {
	case data == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read the payload from standard input: %w", err)
		}
		return b, nil
	case strings.HasPrefix(data, "@"):
		b, err := os.ReadFile(data[1:])
		if err != nil {
			return nil, fmt.Errorf("read the payload: %w", err)
		}
		return b, nil
	}
	return []byte(data), nil
}

// parseHeaders reads --header K=V flags. Errors name the flag, never its value.
func parseHeaders(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--header #%d: want NAME=VALUE (the value is not shown)", i+1)}
		}
		out[k] = v
	}
	return out, nil
}

// setPayload puts p in the request as text when it is UTF-8 that JSON escaping does not
// make longer than base64 would (so a payload up to deliveries.max_payload always fits in
// control.max_body), else as base64.
func setPayload(req *api.DeliveryRequest, p []byte) {
	if utf8.Valid(p) && jsonLen(p) <= base64.StdEncoding.EncodedLen(len(p))+16 {
		s := string(p)
		req.Data = &s
		return
	}
	s := base64.StdEncoding.EncodeToString(p)
	req.DataBase64 = &s
}

// jsonLen is about how long p is as a JSON string.
func jsonLen(p []byte) int {
	n := len(p)
	for _, c := range p {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n
}

// writeJSON prints v (a json.RawMessage as it is) indented, for `--json`.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type listOptions struct {
	state string
	sink  string
	limit int
	after int64
	json  bool
}

func newDeliveriesListCmd(g *globals) *cobra.Command {
	o := &listOptions{}
	c := &cobra.Command{
		Use:   "list [--state STATE] [--sink NAME] [--json]",
		Short: "List deliveries: state, attempts, next attempt, last error or dead reason",
		Long: `List deliveries, oldest first. STATE is pending, sending, delivered or dead. A dead
letter shows why it died: permanent (the error matched a permanent pattern or the
sink said so), max_retries, expired, unknown_sink or quarantined (a damaged row).

  schedd deliveries list
  schedd deliveries list --state dead
  schedd deliveries list --sink webhook --state pending --json
  schedd deliveries list --after 500     # the next page (list prints the cursor)`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, g) },
	}
	f := c.Flags()
	f.StringVar(&o.state, "state", "", "only entries in `STATE`: pending, sending, delivered or dead")
	f.StringVar(&o.sink, "sink", "", "only entries for the sink `NAME`")
	f.IntVar(&o.limit, "limit", 100, "at most `N` entries (1 to 1000)")
	f.Int64Var(&o.after, "after", 0, "list entries after this `ID` (the cursor of the previous page)")
	f.BoolVar(&o.json, "json", false, "print the list as JSON")
	return c
}

func (o *listOptions) run(cmd *cobra.Command, g *globals) error {
	if o.state != "" && !api.DeliveryState(o.state).Valid() {
		return usageError{fmt.Errorf("--state %q: want pending, sending, delivered or dead", o.state)}
	}
	if o.limit < 1 || o.limit > 1000 {
		return usageError{fmt.Errorf("--limit %d: want 1 to 1000", o.limit)}
	}
	q := client.DeliveryQuery{State: api.DeliveryState(o.state), Sink: o.sink, Limit: o.limit, Cursor: o.after}
	list, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.DeliveryList, error) {
		return cl.Deliveries(ctx, q)
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		return writeJSON(out, list)
	}
	if len(list.Deliveries) == 0 {
		fmt.Fprintln(out, "no deliveries")
		return nil
	}
	printDeliveries(out, list, time.Now())
	return nil
}

// printDeliveries writes the table of a list.
func printDeliveries(w io.Writer, list api.DeliveryList, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSINK\tATTEMPTS\tWHEN\tKEY\tDETAIL")
	for _, d := range list.Deliveries {
		when := "-"
		switch {
		case d.FinishedAt != nil:
			when = since(*d.FinishedAt, now) + " ago"
		case d.State == api.DeliverySending:
			when = "now"
		case d.NextAttemptAt != nil && d.NextAttemptAt.After(now):
			when = "in " + until(*d.NextAttemptAt, now)
		case d.NextAttemptAt != nil:
			when = "due"
		}
		detail := d.LastError
		if d.State == api.DeliveryDead {
			detail = d.DeadReason
			if d.LastError != "" && !strings.Contains(d.DeadReason, d.LastError) {
				detail += ": " + d.LastError
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, safe(string(d.State)), safe(d.Sink), d.Attempts, when, safe(d.Key),
			safe(shorten(detail, 80)))
	}
	tw.Flush()
	if list.NextCursor != 0 {
		fmt.Fprintf(w, "more: --after %d\n", list.NextCursor)
	}
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// deliveryID reads the ID argument.
func deliveryID(cmd *cobra.Command, args []string) (int64, error) {
	return idArg(cmd, args, "delivery", "schedd deliveries list")
}

// idArg reads the one positive ID argument of a command about one what.
func idArg(cmd *cobra.Command, args []string, what, list string) (int64, error) {
	if len(args) != 1 {
		return 0, usageError{fmt.Errorf("%s takes one %s ID (see `%s`)", cmd.CommandPath(), what, list)}
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError{fmt.Errorf("%q is not a %s ID (a positive number)", args[0], what)}
	}
	return id, nil
}

func newDeliveriesShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one delivery: its state, attempts, errors, and payload",
		Long: `Show one delivery: its state, attempts and failures, when it is next tried (or
when it finished), its last error and dead-letter reason, the names of its headers
(never their values) and its payload (a delivered entry keeps none).

  schedd deliveries show 42
  schedd deliveries show 42 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := deliveryID(cmd, args)
			if err != nil {
				return err
			}
			d, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.Delivery, error) {
				return cl.Delivery(ctx, id)
			})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), d)
			}
			printDelivery(cmd.OutOrStdout(), d, time.Now())
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the entry as JSON (the payload as data or data_base64)")
	return c
}

// printDelivery writes one entry for people.
func printDelivery(w io.Writer, d api.Delivery, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, safe(v)) }
	at := func(t time.Time) string { return t.Local().Format(time.RFC3339) }
	row("id", strconv.FormatInt(d.ID, 10))
	row("state", string(d.State))
	row("sink", d.Sink)
	row("idempotency key", d.Key)
	row("priority", strconv.Itoa(d.Priority))
	row("attempts", fmt.Sprintf("%d (failures %d)", d.Attempts, d.Failures))
	row("created", at(d.CreatedAt)+" ("+since(d.CreatedAt, now)+" ago)")
	if d.LastAttemptAt != nil {
		row("last attempt", at(*d.LastAttemptAt)+" ("+since(*d.LastAttemptAt, now)+" ago)")
	}
	if d.NextAttemptAt != nil && d.State == api.DeliveryPending {
		row("next attempt", at(*d.NextAttemptAt)+" (in "+until(*d.NextAttemptAt, now)+")")
	}
	if d.FinishedAt != nil {
		row("finished", at(*d.FinishedAt)+" ("+since(*d.FinishedAt, now)+" ago)")
	}
	if d.ExpiresAt != nil {
		row("expires", at(*d.ExpiresAt))
	}
	if d.DeadReason != "" {
		row("dead reason", d.DeadReason)
	}
	if d.LastError != "" {
		row("last error", d.LastError)
	}
	if len(d.HeaderNames) > 0 {
		row("headers", strings.Join(d.HeaderNames, ", ")+" (values hidden)")
	}
	row("payload", fmt.Sprintf("%d bytes", d.PayloadSize))
	tw.Flush()
	switch {
	case d.Data != nil:
		fmt.Fprintf(w, "\n%s\n", safeText(strings.TrimSuffix(*d.Data, "\n")))
	case d.DataBase64 != nil:
		fmt.Fprintf(w, "\n(binary, base64)\n%s\n", safe(*d.DataBase64))
	}
}

// printDeliveriesSummary adds the deliveries rows to `schedd status`.
func printDeliveriesSummary(row func(string, ...string), ds *api.Deliveries, now time.Time) {
	if ds == nil {
		return
	}
	v := []string{fmt.Sprintf("%d pending", ds.Pending)}
	if ds.Sending > 0 {
		v = append(v, fmt.Sprintf("%d sending", ds.Sending))
	}
	v = append(v, fmt.Sprintf("%d delivered", ds.Delivered), fmt.Sprintf("%d dead", ds.Failed))
	if ds.OldestPendingAt != nil {
		v = append(v, "oldest "+since(*ds.OldestPendingAt, now))
	}
	if ds.Store == "postgres" {
		health := "database unreachable"
		if ds.Connected != nil && *ds.Connected {
			health = "connected"
		}
		v = append(v, "store postgres (host "+ds.HostID+", "+health+")")
	} else {
		v = append(v, "synchronous "+ds.Synchronous)
	}
	if ds.StoreState == api.StoreNotOpened && ds.Store != "postgres" {
		v = append(v, "store not opened yet (the first enqueue creates it)")
	}
	row("deliveries", v...)
	if ds.DiskFull || ds.EnqueueError != nil {
		what := []string{"enqueues refused"}
		if ds.EnqueueError != nil {
			what = append(what, "since "+since(ds.EnqueueError.At, now)+" ago", shorten(ds.EnqueueError.Message, 100))
		} else {
			what = append(what, "disk full")
		}
		row("  STORE", what...)
	}
	if e := ds.ReadError; e != nil {
		row("  STORE", "unreadable since "+since(e.At, now)+" ago (counts as of then)", shorten(e.Message, 100))
	}
	if lr := ds.LastRecovery; lr != nil {
		row("  last recovery", summaryLine(*lr), since(lr.At, now)+" ago")
	}
}

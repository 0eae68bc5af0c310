// Command dlbench measures schedd's durable deliveries; bench/deliveries/run.sh drives it
// (see bench/deliveries/README.md). Subcommands:
//
//	fsync    -dir D -n N -size B           append B bytes + fdatasync, N times: the disk's limit
//	sqlite   -dir D -n N -size B           one row per transaction, WAL, synchronous=FULL
//	enqueue  -socket S -clients C -n N     durable enqueues through the control API with
//	         [-batch B] [-wire]            net/http's client (keep-alive); -batch: B entries
//	                                       per request, a JSON array; -sink nosuch -expect
//	                                       400: the same requests answered before the store,
//	                                       the bare round trip; -wire: each client writes
//	                                       its requests on a connection of its own and reads
//	                                       the replies with http.ReadResponse, without the
//	                                       Transport's goroutines (the daemon's share alone)
//	storeenqueue -dsn D -clients C -n N    durable enqueues into the Postgres store of
//	                                       database D, called in this process (as River's
//	                                       Insert is): the store without the control API
//	prefill  -db F -n N -due-at MS         store N entries (for sink "hook") due at MS (unix ms);
//	         [-dsn D]                      -dsn: in the Postgres store of database D instead
//	sink     -listen A -n N -ready-file F  a no-op HTTP sink: 204 to every delivery; reports
//	         [-who W]                      once N arrived. GET /readyz is 200 once F exists
//	                                       (the gateway's readiness probe), else 503; -who
//	                                       names the sender in the report
//	timeline -log F -start NS              offsets of schedd's startup log lines from NS
//	summary  -results F                    the table of a run's results, with the targets
//	pgsummary -results F                   the table of a run of run-postgres.sh: schedd on
//	                                       the Postgres store beside River
//
// Every subcommand but summary prints one JSON object on stdout.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite"

	"github.com/schedd/schedd/bench/deliveries/load"
	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/store"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dlbench fsync|sqlite|enqueue|storeenqueue|prefill|sink|timeline|summary|pgsummary [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"fsync": fsyncCmd, "sqlite": sqliteCmd, "enqueue": enqueueCmd, "storeenqueue": storeEnqueueCmd, "prefill": prefillCmd,
		"sink": sinkCmd, "timeline": timelineCmd, "summary": summaryCmd, "pgsummary": pgSummaryCmd,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "dlbench: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "dlbench:", err)
		os.Exit(1)
	}
}

func fsyncCmd(args []string) error {
	fs := flag.NewFlagSet("fsync", flag.ExitOnError)
	dir := fs.String("dir", ".", "directory on the disk to measure")
	n := fs.Int("n", 2000, "records")
	size := fs.Int("size", 256, "bytes per record")
	fs.Parse(args)
	path := filepath.Join(*dir, "fsync.bench")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	defer f.Close()
	rec := bytes.Repeat([]byte{'x'}, *size)
	lat := make([]time.Duration, 0, *n)
	start := time.Now()
	for range *n {
		t := time.Now()
		if _, err := f.Write(rec); err != nil {
			return err
		}
		if err := fdatasync(f); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
	}
	el := time.Since(start)
	return load.Emit(map[string]any{"bench": "append+fdatasync", "n": *n, "per_s": float64(*n) / el.Seconds(), "latency": load.Summarize(lat)})
}

func sqliteCmd(args []string) error {
	fs := flag.NewFlagSet("sqlite", flag.ExitOnError)
	dir := fs.String("dir", ".", "directory on the disk to measure")
	n := fs.Int("n", 3000, "rows")
	size := fs.Int("size", 256, "payload bytes per row")
	fs.Parse(args)
	path := filepath.Join(*dir, "sqlite.bench.db")
	defer func() {
		for _, suf := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suf)
		}
	}()
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB)"); err != nil {
		return err
	}
	ins, err := db.Prepare("INSERT INTO t (k, v) VALUES (?, ?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	payload := bytes.Repeat([]byte{'x'}, *size)
	lat := make([]time.Duration, 0, *n)
	start := time.Now()
	for i := range *n {
		t := time.Now()
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Stmt(ins).Exec(fmt.Sprint("key-", i), payload); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
	}
	el := time.Since(start)
	return load.Emit(map[string]any{"bench": "sqlite row per transaction (WAL, FULL)", "n": *n, "per_s": float64(*n) / el.Seconds(), "latency": load.Summarize(lat)})
}

func enqueueCmd(args []string) error {
	fs := flag.NewFlagSet("enqueue", flag.ExitOnError)
	socket := fs.String("socket", "", "schedd's control socket")
	clients := fs.Int("clients", 1, "concurrent clients (one net/http client, its connections kept alive; at most 64)")
	n := fs.Int("n", 5000, "entries in all")
	batch := fs.Int("batch", 0, "entries per request, as a JSON array (0: one entry per request, as an object)")
	size := fs.Int("size", 256, "payload bytes")
	sink := fs.String("sink", "hook", "sink name")
	prefix := fs.String("prefix", "k", "idempotency key prefix (unique per run)")
	expect := fs.Int("expect", http.StatusCreated, "the status every single-entry reply must have (400 with an unknown -sink: the round trip without the store)")
	wire := fs.Bool("wire", false, "one connection per client, each request one write and its reply read with http.ReadResponse: no Transport goroutines between the client and the socket")
	fs.IntVar(&load.ServerPID, "server-pid", 0, "schedd's pid, to report its CPU time per entry")
	fs.IntVar(&load.DatabasePID, "db-pid", 0, "the postmaster's pid of a Postgres store, to report the cluster's CPU time per entry")
	fs.Parse(args)
	// schedd's own client (the CLI's): net/http over the socket, connections kept alive.
	hc := client.New(*socket).HTTP
	payload := strings.Repeat("x", *size)
	entry := func(i int) api.DeliveryRequest {
		return api.DeliveryRequest{Sink: *sink, Key: fmt.Sprintf("%s-%d", *prefix, i), Data: &payload}
	}
	post := func(body any) (*http.Response, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		return hc.Post("http://schedd/v1/deliveries", "application/json", bytes.NewReader(b))
	}
	if *batch > 0 {
		per := *batch
		reqs := (*n + per - 1) / per
		r, err := load.Run("durable enqueue via the control API, batches", *clients, reqs, func(_, i int) error {
			var es []api.DeliveryRequest
			for j := i * per; j < min((i+1)*per, *n); j++ {
				es = append(es, entry(j))
			}
			resp, err := post(es)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var rep api.BatchReply
			if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
				return fmt.Errorf("batch: status %d: %w", resp.StatusCode, err)
			}
			if resp.StatusCode != http.StatusOK || rep.Created != len(es) {
				return fmt.Errorf("batch: status %d, %d of %d created (%+v)", resp.StatusCode, rep.Created, len(es), rep.Results[0])
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Per entry, not per request.
		r.Entries = *n
		r.PerS = float64(*n) / r.Seconds
		r.ClientCPUus *= float64(reqs) / float64(*n)
		r.ServerCPUus *= float64(reqs) / float64(*n)
		return load.Emit(struct {
			load.Result
			Batch int `json:"batch"`
		}{r, per})
	}
	bench := "durable enqueue via the control API"
	if *expect != http.StatusCreated {
		bench = "round trip without the store"
	}
	if *wire {
		if *batch > 0 {
			return errors.New("-wire sends one entry per request: no -batch")
		}
		return wireEnqueue(*socket, bench+", a client on the wire", *clients, *n, *expect, entry)
	}
	r, err := load.Run(bench, *clients, *n, func(_, i int) error {
		resp, err := post(entry(i))
		if err != nil {
			return err
		}
		return checkReply(resp, *expect)
	})
	if err != nil {
		return err
	}
	return load.Emit(r)
}

func prefillCmd(args []string) error {
	fs := flag.NewFlagSet("prefill", flag.ExitOnError)
	db := fs.String("db", "", "the store to fill (schedd.db in a state dir)")
	n := fs.Int("n", 100000, "entries")
	size := fs.Int("size", 256, "payload bytes")
	dueAt := fs.Int64("due-at", 0, "when they are due, unix ms (0: at once)")
	sink := fs.String("sink", "hook", "sink name")
	dsn := fs.String("dsn", "", "a Postgres database: fill its store instead of -db")
	fs.Parse(args)
	s, err := openStore(*db, *dsn)
	if err != nil {
		return err
	}
	payload := bytes.Repeat([]byte{'x'}, *size)
	var notBefore time.Time
	if *dueAt > 0 {
		notBefore = time.UnixMilli(*dueAt)
	}
	start := time.Now()
	for i := 0; i < *n; i += api.MaxBatch { // one commit per batch
		ns := make([]store.NewEntry, 0, api.MaxBatch)
		for j := i; j < min(i+api.MaxBatch, *n); j++ {
			ns = append(ns, store.NewEntry{Sink: *sink, Key: fmt.Sprint("pre-", j), Payload: payload, NotBefore: notBefore})
		}
		res, err := s.EnqueueBatch(context.Background(), ns)
		if err != nil {
			s.Close()
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				s.Close()
				return r.Err
			}
		}
	}
	el := time.Since(start)
	if err := s.Close(); err != nil {
		return err
	}
	return load.Emit(map[string]any{"bench": "prefill", "n": *n, "per_s": float64(*n) / el.Seconds()})
}

func sinkCmd(args []string) error {
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	n := fs.Int("n", 0, "report and exit after this many deliveries")
	addrFile := fs.String("addr-file", "", "write the listening address here")
	readyFile := fs.String("ready-file", "", "GET /readyz answers 200 once this file exists")
	who := fs.String("who", "", "who sends (in the report)")
	fs.Parse(args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
			return err
		}
	}
	var count atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	done := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			if _, err := os.Stat(*readyFile); *readyFile == "" || err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		io.Copy(io.Discard, r.Body)
		now := time.Now()
		c := count.Add(1)
		mu.Lock()
		if first.IsZero() {
			first = now
		}
		last = now
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		if c == int64(*n) {
			close(done)
		}
	})}
	go srv.Serve(ln)
	<-done
	mu.Lock()
	el := last.Sub(first)
	mu.Unlock()
	srv.Close()
	return load.Emit(map[string]any{"bench": "deliveries to a no-op HTTP sink", "n": *n, "seconds": el.Seconds(),
		"per_s": float64(*n-1) / el.Seconds(), "who": *who})
}

// timelineCmd reads schedd's JSON log and reports when its startup steps happened, in ms
// after -start (unix ns, taken just before schedd was started).
func timelineCmd(args []string) error {
	fs := flag.NewFlagSet("timeline", flag.ExitOnError)
	logPath := fs.String("log", "", "schedd's log (--log-format json)")
	startNS := fs.Int64("start", 0, "unix ns")
	fs.Parse(args)
	f, err := os.Open(*logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	want := map[string]string{
		"delivery store open":                        "store_open_ms",
		"schedd started":                             "started_ms",
		"delivery recovery complete":                 "recovery_complete_ms",
		"delivery runtime armed the pending entries": "armed_ms",
		"told the service manager schedd is ready":   "gateway_ready_ms",
	}
	out := map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		msg, _ := line["msg"].(string)
		key, ok := want[msg]
		if !ok {
			continue
		}
		ts, _ := line["ts"].(string)
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			continue
		}
		out[key] = float64(at.UnixNano()-*startNS) / 1e6
		switch msg {
		case "delivery runtime armed the pending entries":
			out["armed_entries"] = line["entries"]
			out["arm_scan"] = line["took"]
		case "delivery recovery complete":
			out["recovery_scanned"] = line["scanned"]
			out["recovery_ms"] = line["duration_ms"]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if _, ok := out["armed_ms"]; !ok {
		return errors.New("the log has no \"delivery runtime armed\" line")
	}
	out["bench"] = "startup timeline"
	return load.Emit(out)
}

// readResults reads the results.jsonl that the -results flag of the command name names: the
// lines that decode as T and that keep accepts.
func readResults[T any](name string, args []string, keep func(T) bool) ([]T, error) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	path := fs.String("results", "", "results.jsonl of a run")
	fs.Parse(args)
	data, err := os.ReadFile(*path)
	if err != nil {
		return nil, err
	}
	var rs []T
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r T
		if json.Unmarshal(line, &r) == nil && keep(r) {
			rs = append(rs, r)
		}
	}
	return rs, nil
}

// summaryCmd prints a run's figures next to their targets: enqueue against asynq on Redis
// in the same run, batches against single requests, delivery and startup in absolute terms.
func summaryCmd(args []string) error {
	type result struct {
		Bench        string         `json:"bench"`
		Clients      int            `json:"clients"`
		PerS         float64        `json:"per_s"`
		Latency      load.Latencies `json:"latency"`
		ArmedMS      float64        `json:"armed_ms"`
		StartedMS    float64        `json:"started_ms"`
		RecoveryMS   float64        `json:"recovery_complete_ms"`
		ArmedEntries float64        `json:"armed_entries"`
		RSS          float64        `json:"rss_mb"`
		PeakRSS      float64        `json:"peak_rss_mb"`
		Entries      int            `json:"entries"`
		Batch        int            `json:"batch"`
		ClientCPU    float64        `json:"client_cpu_us"`
		ServerCPU    float64        `json:"server_cpu_us"`
		When         string         `json:"when"`
		Load1        float64        `json:"load1"`
		Load5        float64        `json:"load5"`
	}
	rs, err := readResults("summary", args, func(r result) bool { return r.Bench != "" })
	if err != nil {
		return err
	}
	find := func(bench string, clients int) (result, bool) {
		for _, r := range rs {
			if r.Bench == bench && r.Clients == clients {
				return r, true
			}
		}
		return result{}, false
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	w := os.Stdout
	for _, r := range rs {
		if r.Bench == "loadavg" {
			fmt.Fprintf(w, "load average at the %s: %.2f (1 min), %.2f (5 min)\n", r.When, r.Load1, r.Load5)
		}
	}
	fsyncR, _ := find("append+fdatasync", 0)
	limit, _ := find("sqlite row per transaction (WAL, FULL)", 0)
	fmt.Fprintf(w, "%-52s %10s  %s\n", "measure", "figure", "target")
	fmt.Fprintf(w, "%-52s %8.0f/s  (p50 %.0f us, p99 %.0f us)\n", "limit: append+fdatasync per record", fsyncR.PerS, fsyncR.Latency.P50us, fsyncR.Latency.P99us)
	fmt.Fprintf(w, "%-52s %8.0f/s  (p50 %.0f us, p99 %.0f us)\n", "limit: SQLite row per transaction, WAL/FULL", limit.PerS, limit.Latency.P50us, limit.Latency.P99us)
	one, _ := find("durable enqueue via the control API", 1)
	many, _ := find("durable enqueue via the control API", 16)
	for _, c := range []struct {
		r      result
		asynq  int
		factor float64
	}{{one, 1, 0.8}, {many, 16, 1}} {
		if c.r.Bench == "" {
			continue
		}
		a, ok := find("asynq enqueue on redis (appendfsync always)", c.asynq)
		if !ok {
			continue
		}
		x := c.r.PerS / a.PerS
		fmt.Fprintf(w, "%-52s %8.0f/s  (p50 %.0f us, p99 %.0f us; cpu/entry: redis %.0f us, client %.0f us)\n",
			fmt.Sprintf("asynq on redis, appendfsync always, %d client(s)", c.asynq),
			a.PerS, a.Latency.P50us, a.Latency.P99us, a.ServerCPU, a.ClientCPU)
		fmt.Fprintf(w, "%-52s %8.0f/s  %.2fx asynq's; >= %.1fx: %s (p50 %.0f us, p99 %.0f us; cpu/entry: schedd %.0f us, client %.0f us)\n",
			fmt.Sprintf("schedd enqueue via the control API, %d client(s)", c.asynq), c.r.PerS, x, c.factor, verdict(x >= c.factor),
			c.r.Latency.P50us, c.r.Latency.P99us, c.r.ServerCPU, c.r.ClientCPU)
	}
	if r, ok := find("durable enqueue via the control API, batches", 16); ok && many.PerS > 0 {
		x := r.PerS / many.PerS
		fmt.Fprintf(w, "%-52s %8.0f/s  %.1fx one entry per request; >= 5x: %s (%d per request; p50 %.1f ms, p99 %.1f ms a request; cpu/entry: schedd %.1f us, client %.1f us)\n",
			"schedd batches via the control API, 16 clients", r.PerS, x, verdict(x >= 5), r.Batch,
			r.Latency.P50us/1e3, r.Latency.P99us/1e3, r.ServerCPU, r.ClientCPU)
	}
	for _, c := range []int{1, 16} {
		if r, ok := find("round trip without the store", c); ok {
			fmt.Fprintf(w, "%-52s %8.0f/s  (p50 %.0f us, p99 %.0f us; cpu/request: schedd %.0f us, client %.0f us)\n",
				fmt.Sprintf("same request, unknown sink (no store), %d client(s)", c), r.PerS,
				r.Latency.P50us, r.Latency.P99us, r.ServerCPU, r.ClientCPU)
		}
	}
	if r, ok := find("deliveries to a no-op HTTP sink", 0); ok {
		fmt.Fprintf(w, "%-52s %8.0f/s  >= 5000/s: %s\n", "delivery to a no-op HTTP sink, 16 workers", r.PerS, verdict(r.PerS >= 5000))
	}
	if r, ok := find("startup timeline", 0); ok {
		fmt.Fprintf(w, "%-52s %8.0f ms  <= 1000 ms: %s (serving at %.0f ms, recovery pass done at %.0f ms)\n",
			fmt.Sprintf("start to %.0f pending armed", r.ArmedEntries), r.ArmedMS, verdict(r.ArmedMS <= 1000), r.StartedMS, r.RecoveryMS)
	}
	if r, ok := find("rss with pending entries", 0); ok {
		fmt.Fprintf(w, "%-52s %8.1f MB  <= 60 MB: %s (peak %.1f MB)\n",
			fmt.Sprintf("RSS with %d pending", r.Entries), r.RSS, verdict(r.RSS <= 60), r.PeakRSS)
	}
	return nil
}

// Command dlbench measures schedd's durable deliveries; bench/deliveries/run.sh drives it
// (see bench/deliveries/README.md). Subcommands:
//
//	fsync    -dir D -n N -size B           append B bytes + fdatasync, N times: the disk's limit
//	sqlite   -dir D -n N -size B           one row per transaction, WAL, synchronous=FULL
//	enqueue  -socket S -clients C -n N     durable enqueues through the control API (with
//	                                       -sink nosuch -expect 400: the same requests
//	                                       answered before the store, the bare round trip)
//	prefill  -db F -n N -due-at MS         store N entries (for sink "hook") due at MS (unix ms)
//	sink     -listen A -n N -ready-file F  a no-op HTTP sink: 204 to every delivery; reports
//	                                       once N arrived. GET /readyz is 200 once F exists
//	                                       (the gateway's readiness probe), else 503
//	timeline -log F -start NS              offsets of schedd's startup log lines from NS
//	summary  -results F                    the table of a run's results, with the targets
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite"

	"github.com/schedd/schedd/internal/queue"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dlbench fsync|sqlite|enqueue|prefill|sink|timeline|summary [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"fsync": fsyncCmd, "sqlite": sqliteCmd, "enqueue": enqueueCmd, "prefill": prefillCmd,
		"sink": sinkCmd, "timeline": timelineCmd, "summary": summaryCmd,
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

func emit(v any) error {
	enc := json.NewEncoder(os.Stdout)
	return enc.Encode(v)
}

// latencies summarizes per-operation times.
type latencies struct {
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
}

func summarize(d []time.Duration) latencies {
	if len(d) == 0 {
		return latencies{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(d))), len(d)-1)
		return float64(d[i].Nanoseconds()) / 1e3
	}
	return latencies{P50us: at(0.50), P99us: at(0.99)}
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
	return emit(map[string]any{"bench": "append+fdatasync", "n": *n, "per_s": float64(*n) / el.Seconds(), "latency": summarize(lat)})
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
	return emit(map[string]any{"bench": "sqlite row per transaction (WAL, FULL)", "n": *n, "per_s": float64(*n) / el.Seconds(), "latency": summarize(lat)})
}

// leanClient speaks HTTP/1.1 on one kept connection to the control socket, writing each
// request in one write and parsing the reply with net/http: a load generator light enough
// that it does not take the CPU the daemon needs (the machine has 2 cores).
type leanClient struct {
	conn net.Conn
	br   *bufio.Reader
	buf  []byte
}

func dialLean(socket string) (*leanClient, error) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return nil, err
	}
	return &leanClient{conn: c, br: bufio.NewReaderSize(c, 16<<10)}, nil
}

// post sends body to path and returns the status.
func (c *leanClient) post(path string, body []byte) (int, []byte, error) {
	c.buf = append(c.buf[:0], "POST "...)
	c.buf = append(c.buf, path...)
	c.buf = append(c.buf, " HTTP/1.1\r\nHost: schedd\r\nContent-Type: application/json\r\nContent-Length: "...)
	c.buf = strconv.AppendInt(c.buf, int64(len(body)), 10)
	c.buf = append(c.buf, "\r\n\r\n"...)
	c.buf = append(c.buf, body...)
	if _, err := c.conn.Write(c.buf); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, b, err
}

func enqueueCmd(args []string) error {
	fs := flag.NewFlagSet("enqueue", flag.ExitOnError)
	socket := fs.String("socket", "", "schedd's control socket")
	clients := fs.Int("clients", 1, "concurrent clients, each on its own connection")
	n := fs.Int("n", 5000, "enqueues in all")
	size := fs.Int("size", 256, "payload bytes")
	sink := fs.String("sink", "hook", "sink name")
	prefix := fs.String("prefix", "k", "idempotency key prefix (unique per run)")
	expect := fs.Int("expect", http.StatusCreated, "the status every reply must have (400 with an unknown -sink: the round trip without the store)")
	fs.Parse(args)
	payload := strings.Repeat("x", *size)
	var next atomic.Int64
	lats := make([][]time.Duration, *clients)
	errs := make(chan error, *clients)
	conns := make([]*leanClient, *clients)
	for c := range conns {
		lc, err := dialLean(*socket)
		if err != nil {
			return err
		}
		defer lc.conn.Close()
		conns[c] = lc
	}
	var wg sync.WaitGroup
	start := time.Now()
	for c := range *clients {
		wg.Go(func() {
			var body []byte
			for {
				i := next.Add(1)
				if i > int64(*n) {
					return
				}
				body = fmt.Appendf(body[:0], `{"sink":%q,"idempotency_key":"%s-%d","data":%q}`, *sink, *prefix, i, payload)
				t := time.Now()
				status, b, err := conns[c].post("/v1/deliveries", body)
				if err != nil {
					errs <- err
					return
				}
				if status != *expect {
					errs <- fmt.Errorf("enqueue: status %d: %s", status, b)
					return
				}
				lats[c] = append(lats[c], time.Since(t))
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	bench := "durable enqueue via the control API"
	if *expect != http.StatusCreated {
		bench = "round trip without the store"
	}
	return emit(map[string]any{"bench": bench, "clients": *clients, "n": *n,
		"per_s": float64(*n) / el.Seconds(), "latency": summarize(slices.Concat(lats...))})
}

func prefillCmd(args []string) error {
	fs := flag.NewFlagSet("prefill", flag.ExitOnError)
	db := fs.String("db", "", "the store to fill (schedd.db in a state dir)")
	n := fs.Int("n", 100000, "entries")
	size := fs.Int("size", 256, "payload bytes")
	dueAt := fs.Int64("due-at", 0, "when they are due, unix ms (0: at once)")
	sink := fs.String("sink", "hook", "sink name")
	fs.Parse(args)
	if err := os.MkdirAll(filepath.Dir(*db), 0o700); err != nil {
		return err
	}
	s, err := queue.Open(context.Background(), *db, queue.Options{})
	if err != nil {
		return err
	}
	payload := bytes.Repeat([]byte{'x'}, *size)
	var notBefore time.Time
	if *dueAt > 0 {
		notBefore = time.UnixMilli(*dueAt)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range 64 { // concurrent producers share group commits
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(*n) {
					return
				}
				_, _, err := s.Enqueue(context.Background(), queue.NewEntry{Sink: *sink, Key: fmt.Sprint("pre-", i), Payload: payload, NotBefore: notBefore})
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if err := s.Close(); err != nil {
		return err
	}
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return emit(map[string]any{"bench": "prefill", "n": *n, "per_s": float64(*n) / el.Seconds()})
}

func sinkCmd(args []string) error {
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	n := fs.Int("n", 0, "report and exit after this many deliveries")
	addrFile := fs.String("addr-file", "", "write the listening address here")
	readyFile := fs.String("ready-file", "", "GET /readyz answers 200 once this file exists")
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
	return emit(map[string]any{"bench": "deliveries to a no-op HTTP sink", "n": *n, "seconds": el.Seconds(),
		"per_s": float64(*n-1) / el.Seconds()})
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
	return emit(out)
}

// summaryCmd prints a run's figures next to the targets of issue 5 (measured against the
// SQLite-row limit of the same run).
func summaryCmd(args []string) error {
	fs := flag.NewFlagSet("summary", flag.ExitOnError)
	path := fs.String("results", "", "results.jsonl of a run")
	fs.Parse(args)
	data, err := os.ReadFile(*path)
	if err != nil {
		return err
	}
	type result struct {
		Bench        string    `json:"bench"`
		Clients      int       `json:"clients"`
		PerS         float64   `json:"per_s"`
		Latency      latencies `json:"latency"`
		ArmedMS      float64   `json:"armed_ms"`
		StartedMS    float64   `json:"started_ms"`
		RecoveryMS   float64   `json:"recovery_complete_ms"`
		ArmedEntries float64   `json:"armed_entries"`
		RSS          float64   `json:"rss_mb"`
		PeakRSS      float64   `json:"peak_rss_mb"`
		Entries      int       `json:"entries"`
	}
	var rs []result
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r result
		if json.Unmarshal(line, &r) == nil && r.Bench != "" {
			rs = append(rs, r)
		}
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
	fsyncR, _ := find("append+fdatasync", 0)
	limit, _ := find("sqlite row per transaction (WAL, FULL)", 0)
	fmt.Fprintf(w, "%-46s %10s  %s\n", "measure", "figure", "target")
	fmt.Fprintf(w, "%-46s %8.0f/s  (p50 %.0f us, p99 %.0f us)\n", "limit: append+fdatasync per record", fsyncR.PerS, fsyncR.Latency.P50us, fsyncR.Latency.P99us)
	fmt.Fprintf(w, "%-46s %8.0f/s  (p50 %.0f us, p99 %.0f us)\n", "limit: SQLite row per transaction, WAL/FULL", limit.PerS, limit.Latency.P50us, limit.Latency.P99us)
	for _, c := range []struct {
		clients int
		factor  float64
	}{{1, 0.75}, {16, 4}} {
		r, ok := find("durable enqueue via the control API", c.clients)
		if !ok {
			continue
		}
		x := r.PerS / limit.PerS
		fmt.Fprintf(w, "%-46s %8.0f/s  %.2fx the row limit; >= %.2fx: %s (p50 %.0f us, p99 %.0f us)\n",
			fmt.Sprintf("enqueue via the control API, %d client(s)", c.clients), r.PerS, x, c.factor, verdict(x >= c.factor),
			r.Latency.P50us, r.Latency.P99us)
	}
	if r, ok := find("round trip without the store", 1); ok {
		fmt.Fprintf(w, "%-46s %8.0f/s  (p50 %.0f us, p99 %.0f us)\n", "same request, unknown sink (no store), 1 client", r.PerS,
			r.Latency.P50us, r.Latency.P99us)
	}
	if r, ok := find("deliveries to a no-op HTTP sink", 0); ok {
		fmt.Fprintf(w, "%-46s %8.0f/s  >= 5000/s: %s\n", "delivery to a no-op HTTP sink, 16 workers", r.PerS, verdict(r.PerS >= 5000))
	}
	if r, ok := find("startup timeline", 0); ok {
		fmt.Fprintf(w, "%-46s %8.0f ms  <= 1000 ms: %s (serving at %.0f ms, recovery pass done at %.0f ms)\n",
			fmt.Sprintf("start to %.0f pending armed", r.ArmedEntries), r.ArmedMS, verdict(r.ArmedMS <= 1000), r.StartedMS, r.RecoveryMS)
	}
	if r, ok := find("rss with pending entries", 0); ok {
		fmt.Fprintf(w, "%-46s %8.1f MB  <= 60 MB: %s (peak %.1f MB)\n",
			fmt.Sprintf("RSS with %d pending", r.Entries), r.RSS, verdict(r.RSS <= 60), r.PeakRSS)
	}
	return nil
}

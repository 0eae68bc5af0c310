package supervisor

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// fakeProc is a gateway process that lives inside a synctest bubble. It ends when the
// test calls exit, or when it gets a signal it does not ignore.
type fakeProc struct {
	pid        int
	startedAt  time.Time
	ignoreTerm bool
	done       chan struct{}
	once       sync.Once
	status     platform.ExitStatus

	mu      sync.Mutex
	signals []sigAt
}

type sigAt struct {
	sig    os.Signal
	at     time.Time
	leader bool // sent to the leader alone
}

func (p *fakeProc) PID() int                        { return p.pid }
func (p *fakeProc) Done() <-chan struct{}           { return p.done }
func (p *fakeProc) ExitStatus() platform.ExitStatus { return p.status }
func (p *fakeProc) Release() error                  { return nil }
func (p *fakeProc) KillGroupAndWait(context.Context) error {
	return nil
}

func (p *fakeProc) Signal(sig os.Signal) error { return p.signal(sig, false) }

func (p *fakeProc) SignalLeader(sig os.Signal) error { return p.signal(sig, true) }

func (p *fakeProc) signal(sig os.Signal, leader bool) error {
	p.mu.Lock()
	p.signals = append(p.signals, sigAt{sig, time.Now(), leader})
	p.mu.Unlock()
	if !p.ignoreTerm {
		p.exitSignal(sig.(syscall.Signal))
	}
	return nil
}

func (p *fakeProc) Kill() error {
	p.mu.Lock()
	p.signals = append(p.signals, sigAt{syscall.SIGKILL, time.Now(), false})
	p.mu.Unlock()
	p.exitSignal(syscall.SIGKILL)
	return nil
}

func (p *fakeProc) exitSignal(sig syscall.Signal) {
	p.exit(platform.ExitStatus{Signaled: true, Signal: int(sig), SignalName: platform.SignalName(sig), Code: -1})
}

func (p *fakeProc) exitCode(code int) {
	p.exit(platform.ExitStatus{Exited: true, Code: code})
}

func (p *fakeProc) exit(st platform.ExitStatus) {
	p.once.Do(func() {
		p.status = st
		close(p.done)
	})
}

func (p *fakeProc) sigs() []sigAt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sigAt(nil), p.signals...)
}

// fakeStarter hands out fakeProcs and records every start.
type fakeStarter struct {
	started    chan *fakeProc // every started process, in order
	spawnErr   error
	ignoreTerm bool
	nextPID    int
	cmds       chan platform.Command
}

func newFakeStarter() *fakeStarter {
	return &fakeStarter{started: make(chan *fakeProc, 1000), cmds: make(chan platform.Command, 1000), nextPID: 100}
}

func (f *fakeStarter) Start(cmd platform.Command) (Proc, error) {
	f.cmds <- cmd
	if f.spawnErr != nil {
		return nil, f.spawnErr
	}
	f.nextPID++
	p := &fakeProc{pid: f.nextPID, startedAt: time.Now(), ignoreTerm: f.ignoreTerm, done: make(chan struct{})}
	f.started <- p
	return p, nil
}

// next waits for the next start.
func (f *fakeStarter) next(t *testing.T) *fakeProc {
	t.Helper()
	select {
	case p := <-f.started:
		return p
	default:
		t.Fatalf("no gateway was started (at %v)", time.Now())
		return nil
	}
}

// none asserts that nothing was started.
func (f *fakeStarter) none(t *testing.T) {
	t.Helper()
	select {
	case p := <-f.started:
		t.Fatalf("unexpected start of pid %d at %v", p.pid, p.startedAt)
	default:
	}
}

var errFakeSpawn = errors.New("fork/exec /nonexistent: no such file or directory")

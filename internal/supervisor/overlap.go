package supervisor

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
)

// successor is a gateway started beside the running one by an overlapping restart,
// handed to the next runOnce once the old one is gone.
type successor struct {
	proc      Proc
	out       *outputLogger
	startedAt time.Time
	ready     bool // it sent READY=1 before the old one was stopped
}

// canOverlap reports whether a restart of this ready gateway starts the new one beside it:
// restart.overlap, with sockets to share and READY=1 to tell the new one from the old.
func (l *life) canOverlap() bool {
	c := l.s.cfg
	return c.Overlap && len(c.Sockets) > 0 && c.Readiness.Notify && l.ready
}

// overlap is a restart that starts the new gateway on the shared sockets while this one
// keeps serving. Once the new one sends READY=1 this one gets its stop signal and drains
// (the normal stop), and the new one carries on as the next life, already ready. If the
// new one exits or is not ready within the readiness timeout, it is stopped, this one
// keeps serving and the restart fails. It returns end=true with the outcome when this
// life is over.
func (l *life) overlap(ctx context.Context, r request) (outcome, bool) {
	s := l.s
	pending := []request{r}
	s.mu.Lock()
	if s.next != nil {
		s.cfg, s.next = *s.next, nil
		s.log.Info("new gateway settings in effect")
	}
	s.mu.Unlock()
	proc, output, err := s.start()
	if err != nil {
		s.log.Error("overlapping restart: the new gateway could not be started; the old one keeps serving",
			zap.Int("pid", l.pid), zap.Error(err))
		failRestarts(pending, "spawn failed: "+err.Error()+"; the old gateway keeps serving")
		return outcome{}, false
	}
	next := &successor{proc: proc, out: output, startedAt: time.Now()}
	npid := proc.PID()
	s.update(func(st *api.Gateway) { st.NextPID = npid })
	s.log.Info("overlapping restart: new gateway started beside the old one", zap.Int("pid", npid), zap.Int("old_pid", l.pid))
	var timeout <-chan time.Time
	if rc := s.cfg.Readiness; rc.Timeout > 0 {
		t := time.NewTimer(rc.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	fail := func(why string) (outcome, bool) {
		s.update(func(st *api.Gateway) { st.NextPID = 0 })
		s.log.Error("overlapping restart failed; the old gateway keeps serving", zap.Int("pid", l.pid),
			zap.Int("new_pid", npid), zap.String("why", why))
		failRestarts(pending, "the new gateway "+why+"; it was stopped and the old one keeps serving")
		l.resume()
		return outcome{}, false
	}
	for {
		select {
		case <-proc.Done():
			e := describeExit(proc.ExitStatus(), npid)
			l.stopSuccessor(next, false)
			return fail("exited before it was ready (" + exitText(e) + ")")
		case <-timeout:
			l.stopSuccessor(next, true)
			return fail(fmt.Sprintf("was not ready within %s", s.cfg.Readiness.Timeout))
		case <-l.proc.Done():
			// The old one is gone: the new one is now the gateway, still starting.
			out := l.exited()
			s.update(func(st *api.Gateway) { st.NextPID = 0 })
			s.successor = next
			out.pending = append(out.pending, pending...)
			out.restart, out.failed = true, false
			return out, true
		case m := <-s.notifyc:
			if m.PID == npid || m.PID != 0 && m.PID != l.pid && l.groupIs(m.PID, npid) {
				if m.Fields["READY"] == "1" {
					next.ready = true
					s.log.Info("overlapping restart: the new gateway is ready; stopping the old one",
						zap.Int("pid", npid), zap.Int("old_pid", l.pid), zap.Duration("after", time.Since(next.startedAt)))
					s.successor = next
					l.pending = append(l.pending, pending...)
					l.handover = npid
					return l.stop(api.ExitRestart, ""), true
				}
				continue
			}
			if l.accept(m) {
				if out, end := l.handleNotify(m); end {
					l.stopSuccessor(next, true)
					s.update(func(st *api.Gateway) { st.NextPID = 0 })
					failRestarts(pending, "the old gateway failed during the restart")
					return out, true
				}
			}
		case <-ctx.Done():
			l.stopSuccessor(next, true)
			s.update(func(st *api.Gateway) { st.NextPID = 0 })
			failRestarts(pending, "schedd is stopping")
			return l.stop(api.ExitStop, ""), true
		case r2 := <-s.reqc:
			close(r2.ack)
			switch r2.kind {
			case reqKill:
				_ = proc.Kill()
			case reqRestart, reqReload:
				pending = append(pending, r2) // this restart answers it
			}
		}
	}
}

// groupIs reports whether pid is in process group pgid.
func (l *life) groupIs(pid, pgid int) bool {
	g, err := l.s.groupOf(pid)
	return err == nil && g == pgid
}

// stopSuccessor stops a new gateway that did not take over: the stop signal (when
// graceful), SIGKILL to its group at the stop timeout, then whatever is left of its group.
func (l *life) stopSuccessor(n *successor, graceful bool) {
	s := l.s
	if graceful {
		_ = n.proc.Signal(s.cfg.StopSignal)
		t := time.NewTimer(s.cfg.StopTimeout)
		select {
		case <-n.proc.Done():
		case <-t.C:
			_ = n.proc.Kill()
		}
		t.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupCleanupTimeout)
	defer cancel()
	if err := n.proc.KillGroupAndWait(ctx); err != nil {
		s.log.Warn("processes of the new gateway's group survived", zap.Int("pgid", n.proc.PID()), zap.Error(err))
	}
	if err := n.proc.Release(); err != nil {
		s.log.Debug("release gateway process", zap.Int("pid", n.proc.PID()), zap.Error(err))
	}
}

// resume rearms what the overlap left unattended on this (old, still ready) gateway.
func (l *life) resume() {
	l.wdMisses = 0
	if l.wdTimer != nil {
		l.rearmWatchdog()
	}
}

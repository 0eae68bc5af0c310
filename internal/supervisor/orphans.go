package supervisor

import (
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// How often the processes the gateway left behind are looked for while they are stopped.
const (
	adoptedPollMin = 5 * time.Millisecond
	adoptedPollMax = 100 * time.Millisecond
)

// adoptedStop stops the processes schedd adopted from the gateway's tree: descendants
// orphaned and reparented to schedd as their subreaper (platform.StartReaper). Those that
// left the gateway's process group (setsid, a double fork, R-CHILD-13) outlive the group
// kill and may hold the gateway's port, so each gets the stop signal once when first
// seen and SIGKILL at the stop timeout. Without a running reaper there is nothing to do.
type adoptedStop struct {
	l      *life
	seen   map[platform.AdoptedProcess]bool // sent the stop signal
	killed map[platform.AdoptedProcess]bool // sent SIGKILL
}

func (l *life) adopted() *adoptedStop {
	return &adoptedStop{l: l, seen: map[platform.AdoptedProcess]bool{}, killed: map[platform.AdoptedProcess]bool{}}
}

// round signals the adopted processes outside the gateway's group (the group is
// signalled and killed as a whole): the stop signal to new ones, SIGKILL to all with
// kill. It reports how many are left.
func (a *adoptedStop) round(kill bool) int {
	s := a.l.s
	var todo []platform.AdoptedProcess
	n := 0
	for _, p := range platform.Adopted() {
		if p.PGID == a.l.pid { // KillGroupAndWait's
			continue
		}
		n++
		if kill && !a.killed[p] || !kill && !a.seen[p] {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return n
	}
	sig := s.cfg.StopSignal
	if kill {
		sig = syscall.SIGKILL
	}
	sent, err := platform.SignalAdopted(todo, sig)
	if err != nil {
		s.log.Warn("could not signal a process the gateway left behind", zap.Error(err))
	}
	for _, p := range sent {
		a.seen[p] = true
		msg := "stopping a process the gateway left behind"
		if kill {
			a.killed[p] = true
			msg = "killing a process the gateway left behind"
		}
		s.log.Warn(msg, zap.Int("pid", p.PID), zap.String("name", p.Name), zap.Int("pgid", p.PGID),
			zap.Int("gateway_pid", a.l.pid), zap.String("signal", platform.SignalName(sig)))
	}
	return n
}

// wait runs once the gateway has exited and its group is gone: it stops what is left
// and returns when nothing is, SIGKILLing at deadline (at once with kill) and giving up
// groupCleanupTimeout after that. Requests are answered meanwhile (the watchdog's ping
// among them); the restart requests received are returned for the caller to keep.
func (a *adoptedStop) wait(deadline <-chan time.Time, kill bool) []request {
	s := a.l.s
	var later []request
	var giveUp *time.Timer
	defer func() {
		if giveUp != nil {
			giveUp.Stop()
		}
	}()
	delay := adoptedPollMin
	for first := true; ; first = false {
		if a.round(kill) == 0 {
			return later
		}
		if first {
			s.update(func(st *api.Gateway) { st.State = api.GatewayStopping })
		}
		if kill && giveUp == nil {
			giveUp = time.NewTimer(groupCleanupTimeout)
		}
		var gaveUp <-chan time.Time
		if giveUp != nil {
			gaveUp = giveUp.C
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-deadline:
			deadline, kill = nil, true
		case <-gaveUp:
			t.Stop()
			s.log.Error("processes the gateway left behind survived SIGKILL", zap.Int("gateway_pid", a.l.pid))
			return later
		case r := <-s.reqc:
			close(r.ack)
			switch r.kind {
			case reqKill:
				kill = true
			case reqRestart, reqReload:
				later = append(later, r)
			}
		case <-s.notifyc: // the gateway is gone; a descendant has nothing to tell us now
		}
		t.Stop()
		delay = min(2*delay, adoptedPollMax)
	}
}

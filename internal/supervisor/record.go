package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/platform"
)

// The gateway's pid and start time are kept in Config.PIDFile while it runs, so that a
// schedd killed without a chance to stop it (SIGKILL, OOM, power cut of the supervisor
// only) leaves a trace: the next schedd stops what is left of that gateway before it
// starts its own, and exactly one gateway runs afterwards (R-SUP-01). The same file and
// the same stop work where the kernel kills nothing for us (macOS has no parent-death
// signal) and on Linux, where the leader dies with schedd but its group may not.

// recordPID writes the new gateway's identity; without a known start time nothing is
// written (the pid alone could name a stranger later).
func (s *Supervisor) recordPID(p Proc) {
	path := s.cfg.PIDFile
	if path == "" {
		return
	}
	start, err := platform.StartTime(p.PID())
	select {
	case <-p.Done():
		return // gone already; the start time read may be a newcomer's
	default:
	}
	if err != nil {
		if !errors.Is(err, platform.ErrNotSupported) {
			s.log.Warn("could not read the gateway's start time; its pid is not recorded", zap.Int("pid", p.PID()), zap.Error(err))
		}
		return
	}
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", p.PID(), start), 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		s.log.Warn("could not record the gateway's pid", zap.String("file", path), zap.Error(err))
	}
}

// forgetPID removes the record once the gateway's whole group is gone.
func (s *Supervisor) forgetPID() {
	if s.cfg.PIDFile == "" {
		return
	}
	if err := os.Remove(s.cfg.PIDFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("could not remove the gateway's pid record", zap.String("file", s.cfg.PIDFile), zap.Error(err))
	}
}

// stopStale stops the gateway a previous schedd left running, if the record names one that
// is still there: its stop signal, then SIGKILL after the stop timeout.
func (s *Supervisor) stopStale(ctx context.Context) {
	path := s.cfg.PIDFile
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var pid int
	var start uint64
	if err == nil {
		if _, serr := fmt.Sscanf(string(b), "%d %d\n", &pid, &start); serr != nil || pid <= 1 {
			err = fmt.Errorf("%s: want \"PID STARTTIME\", got %q", path, b)
		}
	}
	if err != nil {
		s.log.Warn("unreadable gateway pid record; ignoring it", zap.Error(err))
		s.forgetPID()
		return
	}
	s.stopWait(s.cfg.StopTimeout) // the start timeout of schedd's own manager runs meanwhile
	cctx, cancel := context.WithTimeout(ctx, s.cfg.StopTimeout+groupCleanupTimeout)
	defer cancel()
	found, err := platform.StopStaleGroup(cctx, pid, start, s.cfg.StopSignal, s.cfg.StopTimeout)
	switch {
	case err != nil:
		s.log.Error("could not stop the gateway an earlier schedd left running", zap.Int("pid", pid), zap.Error(err))
	case found:
		s.log.Warn("stopped the gateway an earlier schedd left running", zap.Int("pid", pid))
	default:
		s.log.Info("the gateway of an earlier schedd is gone", zap.Int("pid", pid))
	}
	s.forgetPID()
}

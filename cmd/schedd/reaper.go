package main

import (
	"errors"
	"os"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/platform"
)

// startReaper makes `schedd run` the reaper of the gateway's orphans (Linux): they are
// reparented to schedd, reaped as they exit, and stopped with the gateway. As PID 1 (a
// container's init) schedd reaps every orphan of the container the same way, and
// SIGTERM/SIGINT stop it gracefully as everywhere else. The returned func undoes it.
func startReaper(log *zap.Logger) func() {
	stop, err := platform.StartReaper(func(pid int, st platform.ExitStatus) {
		log.Debug("reaped an orphaned process", zap.Int("pid", pid), zap.String("status", st.String()))
	})
	if errors.Is(err, platform.ErrNotSupported) {
		return func() {}
	}
	if err != nil {
		log.Warn("cannot adopt the gateway's orphans; processes it leaves behind are not stopped with it", zap.Error(err))
		return func() {}
	}
	if os.Getpid() == 1 {
		log.Info("schedd runs as PID 1: it reaps every orphaned process and stops on SIGTERM or SIGINT")
	}
	return stop
}

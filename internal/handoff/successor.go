package handoff

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// The environment of a successor started in the spawned mode (see AwaitPredecessor).
const (
	// EnvRespawnFD names the fd on which the predecessor writes "go" once it has stopped
	// the gateway and released the lock; its exit closes the pipe.
	EnvRespawnFD = "SCHEDD_RESPAWN_FD"
	// EnvRespawnPID is the predecessor's pid, for the log.
	EnvRespawnPID = "SCHEDD_RESPAWN_PID"
	// EnvNoRespawn disables the replacement of schedd by itself (truthy: 1, true, yes, on).
	EnvNoRespawn = "SCHEDD_NO_RESPAWN"
)

// ErrPredecessorKept means the schedd that started this one as its successor did not hand
// over (it was stopped, or its hand-off was called off): this process must exit quietly.
var ErrPredecessorKept = errors.New("the previous schedd did not hand over")

// AwaitPredecessor is the first act of a successor started in the spawned mode: when
// $SCHEDD_RESPAWN_FD is set it waits until the predecessor has written "go" and exited
// (the pipe's EOF), so the state-dir lock and the sockets are free. Both variables are
// removed from the environment so the gateway never sees them. Without the variable it
// returns at once. ErrPredecessorKept means there is nothing to take over.
func AwaitPredecessor(log *zap.Logger) error {
	fdv, ok := os.LookupEnv(EnvRespawnFD)
	if !ok {
		return nil
	}
	pid := os.Getenv(EnvRespawnPID)
	os.Unsetenv(EnvRespawnFD)
	os.Unsetenv(EnvRespawnPID)
	fd, err := strconv.Atoi(fdv)
	if err != nil || fd < 3 {
		return fmt.Errorf("%s=%q: want a file descriptor", EnvRespawnFD, fdv)
	}
	f := os.NewFile(uintptr(fd), "predecessor")
	defer f.Close()
	log.Info("waiting for the previous schedd to stop the gateway and exit", zap.String("pid", pid))
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return fmt.Errorf("wait for the previous schedd: %w", err)
	}
	if strings.TrimSpace(string(b)) != "go" {
		return ErrPredecessorKept
	}
	log.Info("the previous schedd has exited; taking over", zap.String("pid", pid))
	return nil
}

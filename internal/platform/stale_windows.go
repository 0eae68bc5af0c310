//go:build windows

package platform

import (
	"context"
	"os"
	"time"
)

// StopStaleGroup has nothing to do on Windows: the gateway's Job object is closed, and
// the gateway killed, when schedd dies (KILL_ON_JOB_CLOSE).
func StopStaleGroup(context.Context, int, uint64, os.Signal, time.Duration) (bool, error) {
	return false, nil
}

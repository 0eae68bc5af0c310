//go:build !linux

package platform

import (
	"context"
	"time"
)

// WatchRemovals calls check once at the start and then every fallback until ctx ends:
// without inotify, a removed socket is found by looking (see the Linux version).
func WatchRemovals(ctx context.Context, dirs []string, fallback time.Duration, check func()) {
	check()
	pollRemovals(ctx, fallback, check)
}

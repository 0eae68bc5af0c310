package platform

import (
	"context"
	"time"
)

// pollRemovals calls check every every until ctx ends: WatchRemovals where inotify is not
// available.
func pollRemovals(ctx context.Context, every time.Duration, check func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			check()
		}
	}
}

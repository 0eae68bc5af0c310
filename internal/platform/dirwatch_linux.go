package platform

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// removalEvents are the inotify events that can take a socket's file away: the file deleted
// or moved out of its directory, or the directory itself deleted or moved.
const removalEvents = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// WatchRemovals calls check once at the start and whenever a file in one of dirs, or one of
// dirs itself, is deleted or moved away, until ctx ends. On Linux it waits on inotify, so an
// idle daemon is not woken by it; where inotify cannot be had it calls check every fallback.
// check is what puts things back (it may make the directories again, which are then watched
// again).
func WatchRemovals(ctx context.Context, dirs []string, fallback time.Duration, check func()) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		pollRemovals(ctx, fallback, check)
		return
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: its Read waits in the poller
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	watch := func() {
		for _, d := range dirs {
			// A directory that is gone cannot be watched; check makes it again, and the
			// next round watches it.
			_, _ = unix.InotifyAddWatch(fd, d, removalEvents)
		}
	}
	buf := make([]byte, 4096)
	for {
		// Watched before the check, so a removal right after it is not missed, and again
		// after it: a directory it made anew is a new one to watch.
		watch()
		check()
		watch()
		if _, err := f.Read(buf); err != nil {
			f.Close()
			if ctx.Err() == nil {
				pollRemovals(ctx, fallback, check)
			}
			return
		}
	}
}

package daemon

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/schedd/schedd/internal/store"
)

// TestCommitErrorKind: a failed commit's label is one of a fixed few, whatever its text.
func TestCommitErrorKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("%w: %w", store.ErrDiskFull, syscall.ENOSPC), "disk_full"},
		{fmt.Errorf("%w: database disk image is malformed", store.ErrCorrupt), "corrupt"},
		{fmt.Errorf("%w: fsync /var/lib/schedd/schedd.db: %w", store.ErrStorage, syscall.EIO), "io"},
	} {
		if got := commitErrorKind(tc.err); got != tc.want {
			t.Errorf("commitErrorKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestObserversOffWithoutMetrics: with metrics off the parts get no hooks at all.
func TestObserversOffWithoutMetrics(t *testing.T) {
	d := &Daemon{}
	if o := d.heartbeatObserver(); o.Pulse != nil || o.Late != nil {
		t.Error("heartbeat observer set")
	}
	if o := d.deliveryObserver(); o.Attempt != nil || o.DeadLetter != nil || o.Pass != nil {
		t.Error("delivery observer set")
	}
	if o := d.cronObserver(); o.Ended != nil || o.Late != nil {
		t.Error("cron observer set")
	}
	if d.storeCommits() != nil {
		t.Error("store commit hook set")
	}
}

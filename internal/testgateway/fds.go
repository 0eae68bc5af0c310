//go:build unix

package testgateway

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
)

// FDs are the file descriptors ExhaustFDs holds.
type FDs struct {
	t    testing.TB
	old  syscall.Rlimit
	mu   sync.Mutex
	held []*os.File
	done bool
}

// ExhaustFDs takes every file descriptor the test process may still open (R-SUP-09): it
// lowers the soft RLIMIT_NOFILE to a little over what is open, then opens /dev/null until
// EMFILE. Release gives them back and restores the limit; it runs at the test's end too.
// The test must not run in parallel with others.
func ExhaustFDs(t testing.TB) *FDs {
	t.Helper()
	x := &FDs{t: t}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &x.old); err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatal(err)
	}
	low := x.old
	low.Cur = min(x.old.Cur, uint64(len(open)+64))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Release)
	for {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			return x
		}
		if err != nil {
			x.Release()
			t.Fatal(err)
		}
		x.held = append(x.held, f)
	}
}

// Give closes n of the held descriptors, for the test itself to use.
func (x *FDs) Give(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for ; n > 0 && len(x.held) > 0; n-- {
		x.held[len(x.held)-1].Close()
		x.held = x.held[:len(x.held)-1]
	}
}

// Release closes every held descriptor and restores the limit; later calls do nothing.
func (x *FDs) Release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return
	}
	x.done = true
	for _, f := range x.held {
		f.Close()
	}
	x.held = nil
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &x.old); err != nil {
		x.t.Errorf("restore RLIMIT_NOFILE: %v", err)
	}
}

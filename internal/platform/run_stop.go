package platform

import (
	"sync"
	"time"
)

// graceful makes the end of the command's ctx send the group a polite stop (terminate),
// then SIGKILL it grace later, and leaves the pipes up to runWaitDelay more to drain. It
// returns the func that disarms the pending kill once the leader has been reaped, so that
// a late kill never reaches a reused pgid. With grace <= 0 nothing changes: the group is
// killed at once when ctx ends.
func (g *runGroup) graceful(grace time.Duration) (disarm func()) {
	if grace <= 0 {
		return func() {}
	}
	var (
		mu    sync.Mutex
		done  bool
		timer *time.Timer
	)
	g.cmd.Cancel = func() error {
		err := g.terminate()
		mu.Lock()
		if !done {
			timer = time.AfterFunc(grace, func() {
				mu.Lock()
				defer mu.Unlock()
				if !done {
					_ = g.kill()
				}
			})
		}
		mu.Unlock()
		return err
	}
	g.cmd.WaitDelay = grace + runWaitDelay
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		if timer != nil {
			timer.Stop()
		}
	}
}

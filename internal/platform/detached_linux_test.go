package platform

import (
	"context"
	"testing"
)

// TestWaitExitZombie (Linux, where /proc tells zombies apart): a child that exited but is not reaped yet has exited.
func TestWaitExitZombie(t *testing.T) {
	d, err := StartDetached(DetachedCommand{Argv: helperArgv("exit", "3"), Env: helperEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := WaitExit(ctx, d.PID()); err != nil {
		t.Fatal(err)
	}
	st, err := d.Wait()
	if err != nil || st.Code != 3 {
		t.Fatalf("status %v, %v", st, err)
	}
}

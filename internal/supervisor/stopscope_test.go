//go:build unix

package supervisor

import (
	"context"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestStopMainSignalsTheLeader: with StopMain the restart signal and the stop signal go to
// the gateway's own pid, and only the SIGKILL at the stop timeout goes to the whole group.
func TestStopMainSignalsTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		cfg := testConfig()
		cfg.StopMain = true
		h := start(t, cfg, fs)
		p := fs.next(t)
		if res, err := h.sup.Reload(context.Background(), syscall.SIGUSR2); err != nil || !res.OK {
			t.Fatalf("reload %+v %v", res, err)
		}
		h.cancel()
		synctest.Wait()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		sigs := p.sigs()
		want := []sigAt{{sig: syscall.SIGUSR2, leader: true}, {sig: syscall.SIGTERM, leader: true}, {sig: syscall.SIGKILL}}
		if len(sigs) != len(want) {
			t.Fatalf("signals %v, want %v", sigs, want)
		}
		for i, w := range want {
			if sigs[i].sig != w.sig || sigs[i].leader != w.leader {
				t.Fatalf("signal %d = %v (leader %v), want %v (leader %v)", i, sigs[i].sig, sigs[i].leader, w.sig, w.leader)
			}
		}
	})
}

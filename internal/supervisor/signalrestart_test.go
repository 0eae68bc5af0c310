//go:build unix

package supervisor

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// downProbe is a readiness probe of a gateway that restarts in process on SIGUSR2 the way
// OpenClaw does: it still passes for 100 ms after the signal, then fails for downFor, then
// passes again. With downFor 0 it never fails.
func downProbe(p **fakeProc, downFor time.Duration) checkerFunc {
	return func(context.Context) error {
		if *p == nil {
			return nil
		}
		for _, s := range (*p).sigs() {
			if s.sig != syscall.SIGUSR2 {
				continue
			}
			since := time.Since(s.at)
			if since >= 100*time.Millisecond && since < 100*time.Millisecond+downFor {
				return errors.New("503 restarting")
			}
		}
		return nil
	}
}

// TestSignalRestartWaitsForProbeDown: a signal restart with a readiness probe is done only
// once the probe has failed and then passed again, not at the pass just after the signal;
// the pid stays. A probe that never fails within SignalDownWait ends the wait for a
// failure there, and the restart is done once it passes.
func TestSignalRestartWaitsForProbeDown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		downFor time.Duration
		doneAt  time.Duration // after the signal, to the poll's precision
	}{
		{"down then up", 8 * time.Second, 8100 * time.Millisecond},
		{"never down", 0, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStarter()
				fs.ignoreTerm = true
				var p *fakeProc
				cfg := testConfig()
				cfg.Readiness = Readiness{Probe: downProbe(&p, tc.downFor), Timeout: 30 * time.Second}
				cfg.SignalDownWait = 5 * time.Second
				h := start(t, cfg, fs)
				p = fs.next(t)
				if s := h.state(); s != "ready" {
					t.Fatalf("state %s", s)
				}
				t0 := time.Now()
				done := make(chan RestartResult, 1)
				go func() {
					res, err := h.sup.Reload(context.Background(), syscall.SIGUSR2)
					if err != nil {
						t.Error(err)
					}
					done <- res
				}()
				time.Sleep(tc.doneAt - 50*time.Millisecond)
				synctest.Wait()
				select {
				case res := <-done:
					t.Fatalf("restart done %v after the signal, before the gateway was back: %+v", time.Since(t0), res)
				default:
				}
				res := <-done
				took := time.Since(t0)
				if !res.OK || res.PID != p.pid || res.PreviousPID != p.pid {
					t.Fatalf("result %+v", res)
				}
				if took > tc.doneAt+time.Second {
					t.Fatalf("restart done %v after the signal, want about %v", took, tc.doneAt)
				}
				fs.none(t)
			})
		})
	}
}

package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestRestartProgress: `restart --wait` on a terminal says each step of the restart once,
// as the status shows it: the delay, the wait for idle with what keeps the gateway busy,
// the stop, the start, ready.
func TestRestartProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		two, zero := 2, 0
		deadline := t0.Add(5 * time.Minute)
		pending := func(p api.RestartPending) api.Status {
			return api.Status{Gateway: api.Gateway{State: api.GatewayReady, PID: 10}, Restart: &api.Restart{Pending: &p}}
		}
		inProgress := func(state api.GatewayState, pid int) api.Status {
			return api.Status{Gateway: api.Gateway{State: state, PID: pid}, Restart: &api.Restart{InProgress: true}}
		}
		// Each status is what the daemon answers for one second.
		script := []api.Status{
			pending(api.RestartPending{DueAt: t0.Add(2 * time.Second)}),
			pending(api.RestartPending{DueAt: t0.Add(2 * time.Second)}),
			pending(api.RestartPending{DueAt: t0, DeferredSince: &t0, Inflight: &two, DeadlineAt: &deadline,
				IdleDetail: &api.IdleDetail{Blockers: []string{"session main is replying"}}}),
			pending(api.RestartPending{DueAt: t0, DeferredSince: &t0, Inflight: &zero, DeadlineAt: &deadline}),
			inProgress(api.GatewayStopping, 10),
			inProgress(api.GatewayStarting, 11),
			{Gateway: api.Gateway{State: api.GatewayReady, PID: 11}, Restart: &api.Restart{}},
		}
		status := func(context.Context) (api.Status, error) {
			i := int(time.Since(t0) / time.Second)
			return script[min(i, len(script)-1)], nil
		}
		var out strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(script))*time.Second)
		defer cancel()
		watchRestart(ctx, &out, status)
		local := func(t time.Time) string { return t.Local().Format(time.TimeOnly) }
		want := strings.Join([]string{
			"waiting for the restart delay and cooldown, until " + local(t0.Add(2*time.Second)),
			"waiting for the gateway to be idle (2 in flight; session main is replying), forced at " + local(deadline),
			"waiting for the gateway to be idle (0 in flight), forced at " + local(deadline),
			"stopping the gateway (pid 10)",
			"starting the gateway (pid 11), waiting for it to be ready",
			"the gateway is ready (pid 11)",
		}, "\n") + "\n"
		if out.String() != want {
			t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
		}
	})
}

// TestRestartProgressQuietBeforeAndAfter: a status with no restart seen says nothing, so a
// restart that ended before the first look prints only the final reply.
func TestRestartProgressQuietBeforeAndAfter(t *testing.T) {
	started := false
	ready := api.Status{Gateway: api.Gateway{State: api.GatewayReady, PID: 3}, Restart: &api.Restart{}}
	if got := restartStep(ready, &started, time.Now()); got != "" {
		t.Errorf("no restart seen: %q, want nothing", got)
	}
	if got := restartStep(api.Status{}, &started, time.Now()); got != "" {
		t.Errorf("no restart block: %q, want nothing", got)
	}
}

// TestIsTerminal: a pipe or a buffer is not a terminal, so scripts get no progress lines.
func TestIsTerminal(t *testing.T) {
	if isTerminal(&strings.Builder{}) {
		t.Error("a buffer is taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a file is taken for a terminal")
	}
}

// TestPurgeBatches: a purge goes in batches until one comes back short, says the running
// count after each full batch on a terminal (and nothing elsewhere), and an error after
// some batches says how many were purged.
func TestPurgeBatches(t *testing.T) {
	left := 2*purgeBatch + 7
	purge := func(limit int) (int, error) {
		n := min(limit, left)
		left -= n
		return n, nil
	}
	var out strings.Builder
	n, err := purgeBatches(&out, "dead letters", purge)
	if err != nil || n != 2*purgeBatch+7 {
		t.Fatalf("purged %d, %v; want %d", n, err, 2*purgeBatch+7)
	}
	want := "purged 10000 dead letters so far...\npurged 20000 dead letters so far...\n"
	if out.String() != want {
		t.Errorf("progress %q, want %q", out.String(), want)
	}
	left = purgeBatch + 1
	if n, err := purgeBatches(nil, "dead letters", purge); err != nil || n != purgeBatch+1 {
		t.Errorf("without progress: %d, %v", n, err)
	}
	calls := 0
	_, err = purgeBatches(nil, "dead letters", func(int) (int, error) {
		calls++
		if calls == 2 {
			return 0, errors.New("schedd is stopping")
		}
		return purgeBatch, nil
	})
	if err == nil || !strings.Contains(err.Error(), "after purging 10000 dead letters: schedd is stopping") {
		t.Errorf("error after a batch: %v", err)
	}
}

// A dry run over a long queue says how far it has read; a short one says nothing.
func TestRecoverProgress(t *testing.T) {
	var out strings.Builder
	p := recoverProgress(&out)
	for _, n := range []int{3, 10_000, 20_000, 20_017} {
		p(n)
	}
	want := "read 10000 pending entries so far...\nread 20000 pending entries so far...\nread 20017 pending entries so far...\n"
	if out.String() != want {
		t.Fatalf("progress = %q, want %q", out.String(), want)
	}
}

//go:build unix

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// fleetLease is deliveries.store.postgres.lease in the fleet test: short, so that a
// survivor's rescue is measured in seconds.
const fleetLease = 2 * time.Second

// fleetCycles is how many times TestE2EFleetKill kills a host (SCHEDD_FLEET_CYCLES changes
// it); one kill in fleetRescueEvery leaves the host dead until the survivor took over.
func fleetCycles(t *testing.T) int { return envCount(t, "SCHEDD_FLEET_CYCLES", 100) }

const fleetRescueEvery = 20

// Two `schedd run` hosts share one PostgreSQL database and one HTTP sink, and both enqueue
// and deliver. Host a is killed with SIGKILL at random moments (during its start, or while
// it serves) and started again; host b runs throughout. At every kill the test reads which
// entries host a was sending. One kill in fleetRescueEvery, host a stays dead until host b
// sent what host a was sending, without a restart of either. Then:
//
//   - every acknowledged entry is delivered or dead-lettered (none lost);
//   - a key the sink accepted more than once was sending on host a at a kill;
//   - host b took over host a's claims within 1.5 leases of the kill.
func TestE2EFleetKill(t *testing.T) {
	t.Parallel()
	heavy(t)
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	cycles := fleetCycles(t)
	dsn := pgtest.DSN(t)
	var smu sync.Mutex
	var slow atomic.Bool // before a rescue kill: hold requests so that host a has claims
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	sink := newSinkRecorder(t, func(key string) int {
		smu.Lock()
		status, pause := http.StatusOK, time.Duration(rng.IntN(30))*time.Millisecond
		if rng.IntN(8) == 0 {
			status = http.StatusServiceUnavailable
		}
		smu.Unlock()
		if slow.Load() {
			pause = time.Second
		}
		time.Sleep(pause) // so that a kill finds entries sending
		return status
	})
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	type host struct {
		dir, cfg, pids string
	}
	mkHost := func(id string) host {
		dir := shortDir(t)
		pids := filepath.Join(dir, "gateway.pids")
		return host{dir: dir, pids: pids, cfg: writeConfig(t, fmt.Sprintf(`gateway:
  command: [sh, -c, 'p=$PPID; echo $$ >> %s; while kill -0 $p 2>/dev/null; do sleep 0.2; done']
deliveries:
  store: {postgres: {dsn: %q, host_id: %s, lease: %s, max_conns: 4}}
  schedule: [20ms, 40ms]
  jitter: 0
  max_retries: 10
  replay_spacing: 0s
  workers: 4
  sinks:
    hook: {http: {url: "%s/hook", timeout: 5s}}
`, pids, dsn, id, fleetLease, sink.URL))}
	}
	ha, hb := mkHost("host-a"), mkHost("host-b")

	acked := map[string]int64{}
	var amu sync.Mutex
	ack := func(key string, id int64) {
		amu.Lock()
		acked[key] = id
		amu.Unlock()
	}
	keys := func(prefix string) func(int) string {
		return func(n int) string { return fmt.Sprintf("%s-n%d", prefix, n) }
	}

	b := startDaemon(t, daemonOpts{dir: hb.dir, args: []string{"--config", hb.cfg}})
	stopB := make(chan struct{})
	var wgB sync.WaitGroup
	wgB.Go(func() { produce(t, b, stopB, 10*time.Millisecond, keys("b"), ack) })

	sendingAtKill := map[string]bool{}
	var rescues []time.Duration
	rescued := 0
	start := time.Now()
	for c := range cycles {
		a := newDaemon(t, daemonOpts{dir: ha.dir, args: []string{"--config", ha.cfg}})
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { a.code = exitCode(a.cmd.Wait()); close(a.done) }()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { produce(t, a, stop, 10*time.Millisecond, keys(fmt.Sprint("a", c)), ack) })
		rescue := c%fleetRescueEvery == fleetRescueEvery-1
		switch {
		case rescue:
			// Kill host a while it holds claims.
			waitServing(t, a)
			slow.Store(true)
			for deadline := time.Now().Add(10 * time.Second); len(sendingOn(t, conn, "host-a")) == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("cycle %d: host a sent nothing in 10 s", c)
				}
			}
		case c%2 == 0:
			time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		default:
			waitServing(t, a)
			time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
		}
		_ = a.cmd.Process.Signal(syscall.SIGKILL)
		<-a.done
		killed := time.Now()
		slow.Store(false)
		close(stop)
		wg.Wait()
		killGateways(t, ha.pids)
		held := sendingOn(t, conn, "host-a")
		for _, k := range held {
			sendingAtKill[k] = true
		}
		if !rescue {
			continue
		}
		// host a stays dead: host b, running, must take over its claims.
		for len(held) > 0 {
			still := map[string]bool{}
			for _, k := range sendingOn(t, conn, "host-a") {
				still[k] = true
			}
			left := held[:0]
			for _, k := range held {
				if still[k] {
					left = append(left, k)
				}
			}
			rescued += len(held) - len(left)
			held = left
			if time.Since(killed) > 4*fleetLease {
				t.Fatalf("cycle %d: host a's claims on %q still held %v after its kill", c, held, time.Since(killed))
			}
			time.Sleep(20 * time.Millisecond)
		}
		rescues = append(rescues, time.Since(killed))
	}
	killPhase := time.Since(start)
	close(stopB)
	wgB.Wait()

	// A last host a joins host b, and the two drain the queue.
	a := startDaemon(t, daemonOpts{dir: ha.dir, args: []string{"--config", ha.cfg}})
	waitDrained(t, b)
	for _, d := range []*testDaemon{a, b} {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		if code := d.wait(30 * time.Second); code != 0 {
			t.Errorf("schedd exit %d", code)
		}
	}
	killGateways(t, ha.pids)
	killGateways(t, hb.pids)

	states := fleetStates(t, conn)
	okCount := map[string]int{}
	for _, r := range sink.requests() {
		if r.status < 300 {
			okCount[r.key]++
		}
	}
	lost, dups := 0, 0
	for key := range acked {
		switch st := states[key]; {
		case st != "delivered" && st != "dead":
			lost++
			t.Errorf("acknowledged %s is %q after the drain", key, st)
		case st == "delivered" && okCount[key] == 0:
			t.Errorf("%s is delivered but the sink never accepted it", key)
		}
	}
	for key, n := range okCount {
		if n > 1 {
			dups++
			if !sendingAtKill[key] {
				t.Errorf("the sink accepted %s %d times, but it was never sending on host a at a kill", key, n)
			}
		}
	}
	for i, took := range rescues {
		if took > fleetLease*3/2+1500*time.Millisecond {
			t.Errorf("rescue %d took %v, want about 1.5 leases (%v)", i, took, fleetLease*3/2)
		}
	}
	if rescued == 0 {
		t.Error("no kill left an entry sending on host a: the rescue was not exercised")
	}
	if len(acked) < cycles {
		t.Errorf("only %d entries acknowledged in %d cycles", len(acked), cycles)
	}
	t.Logf("%d kills in %v; %d entries acknowledged, %d sending at a kill, %d accepted twice, %d lost; host b took over %d entries, rescues took %v",
		cycles, killPhase.Round(time.Millisecond), len(acked), len(sendingAtKill), dups, lost, rescued, rescues)
}

// sendingOn returns the keys of the entries sending under an epoch of host.
func sendingOn(t *testing.T, conn *pgx.Conn, host string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT d.idem_key FROM schedd_deliveries d
		JOIN schedd_epochs e ON e.epoch = d.owner_epoch WHERE d.state = 'sending' AND e.host_id = $1`, host)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return nil // the schema is not there yet
		}
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// fleetStates returns the state of every entry by key.
func fleetStates(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT idem_key, state FROM schedd_deliveries`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var key, state string
	_, err = pgx.ForEachRow(rows, []any{&key, &state}, func() error {
		out[key] = state
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

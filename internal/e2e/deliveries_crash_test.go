//go:build unix

package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // to read the store between kills

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// crashCycles is how many times TestE2EDeliveriesCrash kills schedd; SCHEDD_CRASH_CYCLES
// raises it for a longer run (1,000 makes a good nightly job).
func crashCycles(t *testing.T) int { return envCount(t, "SCHEDD_CRASH_CYCLES", 200) }

// envCount is the positive number in the environment variable name, or def when it is unset.
func envCount(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q", name, v)
		}
		return n
	}
	return def
}

// crashWorkers is deliveries.workers in the crash test: at most twice this many entries can
// be sending at a kill (P3): as many being sent, and as many whose outcome is being recorded.
const crashWorkers = 4

// P1, P2, P3 and R-DLV-01 with real processes: schedd is killed with SIGKILL at random
// moments (during its start and recovery pass, or while it enqueues and delivers) while
// three clients enqueue through the control API and the runtime delivers to a local HTTP
// sink that records every idempotency key (and answers 503 to one request in eight, 400 to
// the keys marked -perm). Between kills the test reads the store: which entries were
// sending, which were delivered or dead. After the last cycle a final schedd drains the
// queue. Then:
//
//   - P1: every acknowledged entry is delivered or dead-lettered (none lost);
//   - every delivered entry reached the sink with a 2xx at least once;
//   - P2: no entry found delivered or dead at a kill reaches the sink afterwards;
//   - P3, R-DLV-01: a key that the sink accepted more than once was sending at a kill
//     (resent with the same key), and at most twice deliveries.workers entries were
//     sending at any kill.
func TestE2EDeliveriesCrash(t *testing.T) {
	t.Parallel()
	heavy(t)
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	cycles := crashCycles(t)
	var cycle atomic.Int64
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var receipts []sinkRequest
	sink := newSinkRecorder(t, func(key string) int {
		rmu.Lock()
		defer rmu.Unlock()
		status := http.StatusOK
		switch {
		case strings.HasSuffix(key, "-perm"):
			status = http.StatusBadRequest
		case rng.IntN(8) == 0:
			status = http.StatusServiceUnavailable
		}
		receipts = append(receipts, sinkRequest{key: key, status: status, cycle: cycle.Load()})
		return status
	})
	dir := shortDir(t)
	pids := filepath.Join(dir, "gateway.pids")
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  command: [sh, -c, 'p=$PPID; echo $$ >> %s; while kill -0 $p 2>/dev/null; do sleep 0.2; done']
deliveries:
  schedule: [20ms, 40ms]
  jitter: 0
  max_retries: 10
  replay_spacing: 0s
  workers: %d
  sinks:
    hook: {http: {url: "%s/hook", timeout: 5s}}
`, pids, crashWorkers, sink.URL))
	db := filepath.Join(dir, "schedd.db")

	acked := map[string]int64{} // idempotency key -> id, for every 201/200 reply
	var amu sync.Mutex
	sendingAtKill := map[string]int{} // key -> the first cycle it was found sending at
	finishedAt := map[string]int{}    // key -> the first cycle it was found delivered or dead at
	maxSending := 0
	start := time.Now()
	for c := range cycles {
		cycle.Store(int64(c))
		d := newDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}})
		if err := d.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { d.code = exitCode(d.cmd.Wait()); close(d.done) }()

		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				produce(t, d, stop, 4*time.Millisecond, func(n int) string {
					key := fmt.Sprintf("c%d-g%d-n%d", c, g, n)
					if n%19 == 7 {
						key += "-perm"
					}
					return key
				}, func(key string, id int64) {
					amu.Lock()
					acked[key] = id
					amu.Unlock()
				})
			})
		}
		// Half the kills land at a random moment of the start (store open, recovery pass),
		// half while serving, after a random time.
		if c%2 == 0 {
			time.Sleep(time.Duration(rand.IntN(120)) * time.Millisecond)
		} else {
			waitServing(t, d)
			time.Sleep(time.Duration(10+rand.IntN(140)) * time.Millisecond)
		}
		d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		close(stop)
		wg.Wait()
		killGateways(t, pids)

		sending, finished, lastEpoch := readStoreStates(t, db)
		maxSending = max(maxSending, lastEpoch)
		for _, k := range sending {
			if _, ok := sendingAtKill[k]; !ok {
				sendingAtKill[k] = c
			}
		}
		for _, k := range finished {
			if _, ok := finishedAt[k]; !ok {
				finishedAt[k] = c
			}
		}
	}
	killPhase := time.Since(start)

	// A last schedd drains the queue.
	drainStart := time.Now()
	cycle.Store(int64(cycles))
	d := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}})
	backlog := 0
	if st, err := d.status(); err == nil && st.Deliveries != nil {
		backlog = st.Deliveries.Pending + st.Deliveries.Sending
	}
	waitDrained(t, d)
	drained := time.Since(drainStart)
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("final schedd exit %d", code)
	}
	killGateways(t, pids)
	states := readAllStates(t, db)

	rmu.Lock()
	defer rmu.Unlock()
	okCount := map[string]int{}
	for _, r := range receipts {
		if r.status < 300 {
			okCount[r.key]++
		}
		// P2: nothing found delivered or dead at a kill is sent again later.
		if at, ok := finishedAt[r.key]; ok && int64(at) < r.cycle {
			t.Errorf("P2: %s was finished at kill %d and reached the sink again in cycle %d", r.key, at, r.cycle)
		}
	}
	lost, dups, interrupted := 0, 0, 0
	for key := range acked {
		st := states[key]
		switch {
		case st.state != "delivered" && st.state != "dead":
			lost++
			t.Errorf("P1: acknowledged %s is %q after the drain", key, st.state)
		case strings.HasSuffix(key, "-perm") && (st.state != "dead" || !strings.HasPrefix(st.reason, "permanent")):
			t.Errorf("%s: %+v, want dead with a permanent reason", key, st)
		case st.state == "delivered" && okCount[key] == 0:
			t.Errorf("%s is delivered but the sink never accepted it", key)
		case st.state == "dead" && !strings.HasSuffix(key, "-perm"):
			t.Logf("%s dead-lettered: %s (unlucky 503s)", key, st.reason)
		}
	}
	for key, n := range okCount {
		if n > 1 {
			dups++
			if _, ok := sendingAtKill[key]; !ok {
				t.Errorf("P3: the sink accepted %s %d times, but it was never sending at a kill", key, n)
			}
		}
	}
	for range sendingAtKill {
		interrupted++
	}
	if maxSending > 2*crashWorkers {
		t.Errorf("P3: one schedd left %d entries sending at its kill, more than twice the %d workers", maxSending, crashWorkers)
	}
	if len(acked) < cycles {
		t.Errorf("only %d entries acknowledged in %d cycles: the test did not exercise much", len(acked), cycles)
	}
	if out := d.out.String(); strings.Contains(out, "panic") || strings.Contains(out, "does not add up") {
		t.Errorf("final schedd log:\n%s", out)
	}
	t.Logf("%d kills in %v, %d left pending drained in %v; %d entries acknowledged, %d stored, %d sending at a kill (resent), %d accepted twice, %d lost",
		cycles, killPhase.Round(time.Millisecond), backlog, drained.Round(time.Millisecond), len(acked), len(states), interrupted, dups, lost)
}

// produce enqueues through d's control API, under the keys key(0), key(1), ..., until stop
// is closed: one entry every pause to 4*pause, and every millisecond while d does not
// answer (not up yet, or killed). ack is told of every acknowledged entry; a refusal fails
// the test.
func produce(t *testing.T, d *testDaemon, stop <-chan struct{}, pause time.Duration, key func(n int) string, ack func(key string, id int64)) {
	cl := client.New(d.socket)
	defer cl.Close()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		k := key(n)
		data := "payload of " + k
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var rep api.EnqueueReply
		err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: k, Data: &data}, &rep)
		cancel()
		if err == nil {
			ack(k, rep.ID)
			time.Sleep(pause + rand.N(3*pause))
			continue
		}
		if ae, ok := errors.AsType[*api.Error](err); ok {
			t.Errorf("enqueue %s refused: %v", k, ae)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDrained waits until the store of d holds nothing pending or sending (60 s at most).
func waitDrained(t *testing.T, d *testDaemon) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := d.status()
		if err == nil && st.Deliveries != nil && st.Deliveries.Pending == 0 && st.Deliveries.Sending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not drain: %+v, %v", st.Deliveries, err)
		}
	}
}

// killGateways kills the gateways a killed schedd left behind (they run in their own
// process groups, and would end on their own once they see schedd gone) and empties the
// pid file.
func killGateways(t *testing.T, pidFile string) {
	t.Helper()
	for _, f := range strings.Fields(readFile(t, pidFile)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := os.WriteFile(pidFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

type storedState struct {
	state, reason string
	epoch         int64 // owner epoch of a sending entry
}

func openStore(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// readStoreStates returns the keys of the entries sending, and of those delivered or dead,
// and how many entries the newest epoch (the schedd just killed) left sending.
func readStoreStates(t *testing.T, path string) (sending, finished []string, lastEpoch int) {
	t.Helper()
	states := readAllStates(t, path)
	newest := int64(0)
	for _, st := range states {
		newest = max(newest, st.epoch)
	}
	for key, st := range states {
		if st.state == "sending" && st.epoch == newest {
			lastEpoch++
		}
		switch st.state {
		case "sending":
			sending = append(sending, key)
		case "delivered", "dead":
			finished = append(finished, key)
		}
	}
	sort.Strings(sending)
	return sending, finished, lastEpoch
}

func readAllStates(t *testing.T, path string) map[string]storedState {
	t.Helper()
	out := map[string]storedState{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out
	}
	db := openStore(t, path)
	defer db.Close()
	rows, err := db.Query("SELECT idem_key, state, COALESCE(dead_reason, ''), COALESCE(owner_epoch, 0) FROM deliveries")
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return out // killed before the first migration committed
		}
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var st storedState
		if err := rows.Scan(&key, &st.state, &st.reason, &st.epoch); err != nil {
			t.Fatal(err)
		}
		out[key] = st
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

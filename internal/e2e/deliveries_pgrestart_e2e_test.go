//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

const (
	// pgRestartLease is deliveries.store.postgres.lease in the restart test: shorter than
	// an outage, so that both hosts' claims run out while the database is down.
	pgRestartLease = 2 * time.Second
	// pgOutage is how long the database stays down each time.
	pgOutage = 3 * time.Second
	// pgRequestLimit bounds one enqueue: the control API's request timeout (30 s) and some.
	pgRequestLimit = 35 * time.Second
)

// R-DLV-09: two `schedd run` hosts share one PostgreSQL server (a cluster of this test's
// own) and one HTTP sink; four clients enqueue through both control APIs without pause.
// The server is stopped twice for a few seconds, once with pg_ctl stop -m fast (sessions
// ended, checkpoint) and once with -m immediate (a crash: recovery from the WAL at the next
// start), and started again; the clients go on enqueueing throughout. Then:
//
//   - while the server is down, every refused enqueue is a 503 `unavailable` whose JSON
//     message says the database cannot be reached, in less than the request timeout: no
//     500, no hang, no cut connection; and the status of both hosts says the store is not
//     connected;
//   - once it is back, both hosts acknowledge enqueues again, listen again for other hosts'
//     enqueues, send the last entries acknowledged and pick up an entry another host
//     wrote, within 15 s each, with no restart of schedd nor of its gateway;
//   - every acknowledged entry is delivered (none lost), and the sink accepted every
//     delivered one; `schedd status --json` shows the store connected and no enqueue error.
//
// Two clients enqueue a refused entry again with its key until it is acknowledged, two go
// on with the next. A refused enqueue may still have been stored (the server committed it
// and went away before it could say so): it may be delivered or not, and is only counted.
func TestE2EPostgresRestart_RDLV09(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	pg := pgtest.NewCluster(t)
	dsn := pg.DSN() + " connect_timeout=5"
	sink := newSinkRecorder(t, func(string) int {
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // so that outages find entries sending
		return http.StatusOK
	})
	type host struct {
		id   string
		d    *testDaemon
		pids string
		gw   api.Gateway // at start
		pid  int         // schedd's
	}
	hosts := []*host{{id: "host-a"}, {id: "host-b"}}
	for _, h := range hosts {
		dir := shortDir(t)
		h.pids = filepath.Join(dir, "gateway.pids")
		cfg := writeConfig(t, fmt.Sprintf(`gateway:
  command: [sh, -c, 'p=$PPID; echo $$ >> %s; while kill -0 $p 2>/dev/null; do sleep 0.2; done']
deliveries:
  store: {postgres: {dsn: %q, host_id: %s, lease: %s, max_conns: 4}}
  schedule: [50ms, 100ms, 200ms]
  jitter: 0
  max_retries: 20
  workers: 4
  sinks:
    hook: {http: {url: "%s/hook", timeout: 5s}}
`, h.pids, dsn, h.id, pgRestartLease, sink.URL))
		h.d = startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}})
		st := h.d.waitFor("gateway ready", func(g api.Gateway) bool { return g.State == api.GatewayReady && g.PID != 0 })
		h.gw, h.pid = st.Gateway, st.Schedd.PID
		t.Cleanup(func() { killGateways(t, h.pids) })
	}
	pgtest.WaitListening(t, dsn, postgres.Channel, 2)

	var mu sync.Mutex
	acked := map[string]int64{} // key -> id
	refused := map[string]bool{}
	var acks, refusals [2]atomic.Int64 // by host
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var last [4]string // the last key each client had acknowledged
	for c := range 4 {
		hi := c % 2
		h := hosts[hi]
		// Clients 0 and 1 enqueue a refused entry again with its key, as a producer that
		// must not lose it does; clients 2 and 3 go on with the next one.
		again := c < 2
		wg.Go(func() {
			cl := client.New(h.d.socket)
			defer cl.Close()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("%s-c%d-n%d", h.id, c, n)
				data := "payload of " + key
				ctx, cancel := context.WithTimeout(context.Background(), pgRequestLimit)
				began := time.Now()
				var rep api.EnqueueReply
				err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: key, Data: &data}, &rep)
				took := time.Since(began)
				cancel()
				mu.Lock()
				if err == nil {
					acked[key] = rep.ID
					delete(refused, key)
					last[c] = key
				} else {
					refused[key] = true
				}
				mu.Unlock()
				if err == nil {
					acks[hi].Add(1)
					time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
					continue
				}
				refusals[hi].Add(1)
				ae, ok := errors.AsType[*api.Error](err)
				switch {
				case !ok:
					t.Errorf("enqueue %s on %s: no reply after %v: %v", key, h.id, took.Round(time.Millisecond), err)
					return
				case ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeUnavailable ||
					!strings.Contains(ae.Message, "database"):
					t.Errorf("enqueue %s on %s refused with %d %q: %q; want 503 %q saying the database cannot be reached",
						key, h.id, ae.Status, ae.Code, ae.Message, api.CodeUnavailable)
					return
				}
				if again {
					n-- // the same key next time
				}
				time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
			}
		})
	}
	finish := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(finish) // before the daemons are killed, should the test end early
	// acknowledged waits until each host acknowledged n more enqueues.
	acknowledged := func(what string, n int64) {
		t.Helper()
		from := [2]int64{acks[0].Load(), acks[1].Load()}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if acks[0].Load() >= from[0]+n && acks[1].Load() >= from[1]+n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: host-a acknowledged %d, host-b %d enqueues in 30 s, want %d each",
					what, acks[0].Load()-from[0], acks[1].Load()-from[1], n)
			}
		}
	}
	// connected waits until the status of every host says whether its store is connected.
	connected := func(what string, want bool) {
		t.Helper()
		for _, h := range hosts {
			var last *api.Deliveries
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				st, err := h.d.status()
				if err == nil {
					last = st.Deliveries
					if c := last; c != nil && c.Connected != nil && *c.Connected == want {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: status of %s shows deliveries %+v (err %v), want connected = %v", what, h.id, last, err, want)
				}
			}
		}
	}

	acknowledged("before the first outage", 30)
	for i, mode := range []string{"fast", "immediate"} {
		what := fmt.Sprintf("outage %d (stop -m %s)", i+1, mode)
		from := [2]int64{refusals[0].Load(), refusals[1].Load()}
		began := time.Now()
		if mode == "fast" {
			pg.Stop(t)
		} else {
			pg.Crash(t)
		}
		connected(what, false)
		time.Sleep(pgOutage - time.Since(began))
		for deadline := time.Now().Add(15 * time.Second); refusals[0].Load() == from[0] || refusals[1].Load() == from[1]; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: a host refused no enqueue while the database was down", what)
			}
		}
		pg.Start(t)
		t.Logf("%s: down %v", what, time.Since(began).Round(time.Millisecond))
		acknowledged(what+": after the restart", 20)
		connected(what+": after the restart", true)
		pgtest.WaitListening(t, dsn, postgres.Channel, 2)
	}
	acknowledged("after the outages", 30)
	finish()
	if t.Failed() {
		t.FailNow()
	}

	// The last entries acknowledged are sent promptly: the runtimes run again.
	for _, key := range last {
		for deadline := time.Now().Add(15 * time.Second); sink.accepted(key) == 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s, acknowledged after the restarts, was not delivered within 15 s", key)
			}
		}
	}
	// Another host's entry, written after the restarts, is picked up by the woken hosts.
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	now := time.Now().UnixMilli()
	if _, err := conn.Exec(context.Background(), `INSERT INTO schedd_deliveries (sink, idem_key, payload, payload_size,
		payload_hash, state, next_attempt_at, created_at, updated_at)
		VALUES ('hook', 'other-host', 'x', 1, sha256('x'), 'pending', $1, $1, $1)`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), "SELECT pg_notify($1, 'host-c')", postgres.Channel); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); sink.accepted("other-host") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an entry another host wrote after the restarts was not delivered within 15 s")
		}
	}

	for _, h := range hosts {
		waitDrained(t, h.d)
	}
	for _, h := range hosts {
		code, out, errOut := cli("status", "--json", "--socket", h.d.socket)
		if code != 0 {
			t.Fatalf("schedd status --json on %s: exit %d: %s", h.id, code, errOut)
		}
		var st api.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status of %s: %v\n%s", h.id, err, out)
		}
		ds, gw := st.Deliveries, st.Gateway
		switch {
		case ds == nil || ds.Store != "postgres" || ds.StoreState != api.StoreOpen || ds.Connected == nil || !*ds.Connected:
			t.Errorf("status of %s after the restarts: deliveries %+v, want the postgres store open and connected", h.id, ds)
		case ds.EnqueueError != nil:
			t.Errorf("status of %s after the restarts still shows the enqueue error %+v", h.id, ds.EnqueueError)
		}
		if st.Schedd.PID != h.pid || h.d.cmd.Process.Pid != h.pid {
			t.Errorf("schedd of %s is pid %d, was %d", h.id, st.Schedd.PID, h.pid)
		}
		if gw.State != api.GatewayReady || gw.PID != h.gw.PID || gw.Restarts != h.gw.Restarts {
			t.Errorf("gateway of %s after the restarts: %s pid %d, %d restarts; want ready, pid %d, %d restarts",
				h.id, gw.State, gw.PID, gw.Restarts, h.gw.PID, h.gw.Restarts)
		}
	}
	for _, h := range hosts {
		_ = h.d.cmd.Process.Signal(syscall.SIGTERM)
		if code := h.d.wait(30 * time.Second); code != 0 {
			t.Errorf("schedd of %s exit %d", h.id, code)
		}
		if out := h.d.out.String(); strings.Contains(out, "panic") {
			t.Errorf("schedd of %s panicked:\n%s", h.id, out)
		}
	}

	states := fleetStates(t, conn)
	lost, storedRefused := 0, 0
	for key := range acked {
		switch st := states[key]; {
		case st != "delivered" && st != "dead":
			lost++
			t.Errorf("acknowledged %s is %q after the drain", key, st)
		case st == "delivered" && sink.accepted(key) == 0:
			t.Errorf("%s is delivered but the sink never accepted it", key)
		}
	}
	for key := range refused {
		if _, ok := states[key]; ok {
			storedRefused++
		}
	}
	dups := 0
	for _, n := range sink.okCounts() {
		if n > 1 {
			dups++
		}
	}
	t.Logf("%d entries acknowledged (host-a %d, host-b %d), %d refusals (host-a %d, host-b %d); %d keys never acknowledged, "+
		"of which %d were stored anyway; %d lost; the sink got %d requests and accepted %d keys more than once",
		len(acked), acks[0].Load(), acks[1].Load(), refusals[0].Load()+refusals[1].Load(), refusals[0].Load(), refusals[1].Load(),
		len(refused), storedRefused, lost, len(sink.requests()), dups)
}

// accepted is how many times the sink answered 2xx to key.
func (s *sinkRecorder) accepted(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok[key]
}

// okCounts is how many times the sink answered 2xx, by key.
func (s *sinkRecorder) okCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.ok)
}

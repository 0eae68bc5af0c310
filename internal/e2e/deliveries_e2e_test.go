//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// sinkRecorder is an HTTP destination for deliveries: it records every request it gets
// (idempotency key, headers, body) and answers with what answer says (default 200).
type sinkRecorder struct {
	*httptest.Server
	mu     sync.Mutex
	got    []sinkRequest
	ok     map[string]int // 2xx answers per idempotency key
	answer func(key string) int
}

type sinkRequest struct {
	key    string
	header http.Header
	body   string
	status int
	cycle  int64 // set by the crash test
}

func newSinkRecorder(t *testing.T, answer func(key string) int) *sinkRecorder {
	t.Helper()
	s := &sinkRecorder{ok: map[string]int{}, answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *sinkRecorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	status := http.StatusOK
	if s.answer != nil {
		status = s.answer(key)
	}
	if strings.HasSuffix(r.URL.Path, "/reject") {
		status = http.StatusBadRequest
	}
	s.mu.Lock()
	s.got = append(s.got, sinkRequest{key: key, header: r.Header.Clone(), body: string(body), status: status})
	if status < 300 {
		s.ok[key]++
	}
	s.mu.Unlock()
	w.WriteHeader(status)
	if status == http.StatusBadRequest {
		fmt.Fprintln(w, "chat not found")
	}
}

func (s *sinkRecorder) requests() []sinkRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkRequest(nil), s.got...)
}

// delivery fetches one entry through the control API.
func (d *testDaemon) delivery(t *testing.T, id int64) api.Delivery {
	t.Helper()
	var v api.Delivery
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.New(d.socket).Do(ctx, http.MethodGet, fmt.Sprintf("/v1/deliveries/%d", id), nil, &v); err != nil {
		t.Fatalf("get delivery %d: %v", id, err)
	}
	return v
}

// waitDelivery polls an entry until cond holds (15 s at most).
func (d *testDaemon) waitDelivery(t *testing.T, id int64, what string, cond func(api.Delivery) bool) api.Delivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := d.delivery(t, id)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %d is %+v; waited for %s", id, v, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// enqueueCLI runs `schedd deliveries enqueue --json` and returns the reply.
func enqueueCLI(t *testing.T, d *testDaemon, args ...string) api.EnqueueReply {
	t.Helper()
	code, out, errOut := cli(append([]string{"deliveries", "enqueue", "--json", "--socket", d.socket}, args...)...)
	if code != 0 {
		t.Fatalf("enqueue %q: exit %d: %s", args, code, errOut)
	}
	var r api.EnqueueReply
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("enqueue reply %q: %v", out, err)
	}
	return r
}

// The operator's walk-through with the CLI against a real daemon: enqueue to an http and an
// exec sink (the same key twice is one entry), a dead letter with its reason, retry, drop,
// purge, recover --dry-run and the status rows. A header value given on the command line
// reaches the sink and appears in no output and no log line.
func TestE2EDeliveriesCLI(t *testing.T) {
	t.Parallel()
	sink := newSinkRecorder(t, nil)
	execOut := filepath.Join(t.TempDir(), "exec.out")
	cfg := writeConfig(t, fmt.Sprintf(`deliveries:
  schedule: [100ms, 200ms]
  max_retries: 2
  replay_spacing: 0s
  sinks:
    hook: {http: {url: "%[1]s/hook"}}
    reject: {http: {url: "%[1]s/reject"}}
    script: {exec: {command: [sh, -c, 'cat >> %[2]s; echo " $SCHEDD_IDEMPOTENCY_KEY $SCHEDD_ATTEMPT" >> %[2]s']}}
`, sink.URL, execOut))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	const secret = "Bearer s3cr3t-t0ken"

	first := enqueueCLI(t, d, "--sink", "hook", "--key", "order-1", "--header", "Authorization="+secret, "--data", `{"n": 1}`)
	if !first.Created || first.Key != "order-1" {
		t.Fatalf("first enqueue %+v", first)
	}
	code, out, _ := cli("deliveries", "enqueue", "--socket", d.socket, "--sink", "hook", "--key", "order-1",
		"--header", "Authorization="+secret, "--data", `{"n": 1}`)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("already stored under key order-1: delivery %d", first.ID)) {
		t.Fatalf("same key again: exit %d: %s", code, out)
	}
	d.waitDelivery(t, first.ID, "delivered", func(v api.Delivery) bool { return v.State == api.DeliveryDelivered })
	reqs := sink.requests()
	if len(reqs) != 1 || reqs[0].key != "order-1" || reqs[0].header.Get("Authorization") != secret || reqs[0].body != `{"n": 1}` {
		t.Fatalf("the sink got %+v", reqs)
	}

	payload := filepath.Join(t.TempDir(), "payload.txt")
	if err := os.WriteFile(payload, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	ex := enqueueCLI(t, d, "--sink", "script", "--data", "@"+payload, "--key", "script-1")
	d.waitDelivery(t, ex.ID, "delivered", func(v api.Delivery) bool { return v.State == api.DeliveryDelivered })
	if got := readFile(t, execOut); got != "from a file script-1 1\n" {
		t.Fatalf("the exec sink wrote %q", got)
	}

	dead := enqueueCLI(t, d, "--sink", "reject", "--data", "x")
	d.waitDelivery(t, dead.ID, "dead", func(v api.Delivery) bool { return v.State == api.DeliveryDead })
	code, out, _ = cli("deliveries", "list", "--state", "dead", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "permanent") || !strings.Contains(out, "HTTP 400") || !strings.Contains(out, fmt.Sprint(dead.ID)) {
		t.Fatalf("list --state dead: exit %d:\n%s", code, out)
	}
	code, out, _ = cli("deliveries", "show", fmt.Sprint(first.ID), "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "Authorization (values hidden)") || !strings.Contains(out, "delivered") {
		t.Fatalf("show: exit %d:\n%s", code, out)
	}
	if code, out, _ = cli("deliveries", "retry", fmt.Sprint(dead.ID), "--socket", d.socket); code != 0 || !strings.Contains(out, "pending again") {
		t.Fatalf("retry: exit %d: %s", code, out)
	}
	d.waitDelivery(t, dead.ID, "dead again", func(v api.Delivery) bool { return v.State == api.DeliveryDead && v.Attempts == 2 })
	if code, _, errOut := cli("deliveries", "retry", fmt.Sprint(first.ID), "--socket", d.socket); code != exitFailure || !strings.Contains(errOut, "delivered") {
		t.Fatalf("retry of a delivered entry: exit %d: %s", code, errOut)
	}
	if code, out, _ = cli("deliveries", "purge", "--dead", "--older-than", "0s", "--socket", d.socket); code != 0 || !strings.Contains(out, "purged 1 dead letters") {
		t.Fatalf("purge: exit %d: %s", code, out)
	}
	gone := enqueueCLI(t, d, "--sink", "reject", "--data", "drop me", "--ttl", "1h", "--priority", "3")
	d.waitDelivery(t, gone.ID, "dead", func(v api.Delivery) bool { return v.State == api.DeliveryDead })
	if code, out, _ = cli("deliveries", "drop", fmt.Sprint(gone.ID), "--socket", d.socket); code != 0 || !strings.Contains(out, "dropped") {
		t.Fatalf("drop: exit %d: %s", code, out)
	}
	if code, _, errOut := cli("deliveries", "show", fmt.Sprint(gone.ID), "--socket", d.socket); code != exitFailure || !strings.Contains(errOut, "not found") {
		t.Fatalf("show a dropped entry: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli("deliveries", "drop", fmt.Sprint(first.ID), "--socket", d.socket); code != exitFailure || !strings.Contains(errOut, "tombstone") {
		t.Fatalf("drop a delivered entry: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli("deliveries", "enqueue", "--socket", d.socket, "--sink", "nope", "--data", "x"); code != exitFailure ||
		!strings.Contains(errOut, `no sink "nope" is configured`) || !strings.Contains(errOut, "hook, reject, script") {
		t.Fatalf("unknown sink: exit %d: %s", code, errOut)
	}
	if code, out, _ = cli("deliveries", "recover", "--dry-run", "--socket", d.socket); code != 0 || !strings.Contains(out, "0 pending: nothing to do") {
		t.Fatalf("recover --dry-run: exit %d: %s", code, out)
	}
	code, out, _ = cli("status", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "deliveries") || !strings.Contains(out, "synchronous full") || !strings.Contains(out, "last recovery") {
		t.Fatalf("status: exit %d:\n%s", code, out)
	}
	code, out, _ = cli("status", "--json", "--socket", d.socket)
	var doc struct {
		Deliveries map[string]any `json:"deliveries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("status --json: %s", out)
	}
	for _, k := range []string{"pending", "failed", "delivered", "oldest_pending_at", "last_recovery", "synchronous"} {
		if _, ok := doc.Deliveries[k]; !ok {
			t.Errorf("status --json deliveries block lacks %q", k)
		}
	}
	code, out, _ = cli("deliveries", "list", "--json", "--socket", d.socket)
	if code != 0 || strings.Contains(out, "s3cr3t") {
		t.Fatalf("list --json: exit %d:\n%s", code, out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(d.out.String(), "s3cr3t") {
		t.Fatalf("the daemon logged a header value:\n%s", d.out.String())
	}
}

// R-DLV-02: entries for the gateway sink wait, uncharged, while the gateway is not ready,
// across a restart of schedd too: the recovery pass defers them (deferred_not_ready) and
// they are delivered, once each with no failure counted, when the gateway becomes ready.
// R-DLV-03: one whose TTL passes meanwhile is dead-lettered ("expired"), never sent.
func TestE2EGatewaySinkWaitsForReady_RDLV02(t *testing.T) {
	t.Parallel()
	sink := newSinkRecorder(t, nil)
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  readiness: {notify: {}, timeout: 60s}
deliveries:
  schedule: [100ms]
  replay_spacing: 0s
  sinks:
    outbox: {gateway: {path: /hooks/deliver, base_url: "%s"}}
`, sink.URL))
	// The first schedd's gateway never gets ready.
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	var ids []int64
	for i := range 5 {
		ids = append(ids, enqueueCLI(t, d, "--sink", "outbox", "--data", fmt.Sprint("m", i)).ID)
	}
	// R-DLV-03: one with a short TTL expires while it waits: dead-lettered unsent.
	short := enqueueCLI(t, d, "--sink", "outbox", "--data", "late", "--ttl", "200ms")
	v := d.waitDelivery(t, short.ID, "expired", func(v api.Delivery) bool { return v.State == api.DeliveryDead })
	if v.DeadReason != "expired" || v.Attempts != 0 {
		t.Fatalf("expired entry %+v", v)
	}
	time.Sleep(300 * time.Millisecond) // three retry periods: nothing may be attempted
	for _, id := range ids {
		if v := d.delivery(t, id); v.State != api.DeliveryPending || v.Attempts != 0 || v.Failures != 0 {
			t.Fatalf("entry while the gateway is not ready: %+v", v)
		}
	}
	if n := len(sink.requests()); n != 0 {
		t.Fatalf("%d sends to a gateway that is not ready", n)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// The next one's gateway is ready after a second: recovery defers, then all go.
	d = startDaemon(t, daemonOpts{dir: d.dir, args: []string{"--config", cfg}, gateway: []string{"ready", "ready-delay=1s"}})
	st, err := d.status()
	if err != nil || st.Gateway.State == api.GatewayReady {
		t.Fatalf("gateway ready too soon for the test: %+v, %v", st.Gateway, err)
	}
	for _, id := range ids {
		v := d.waitDelivery(t, id, "delivered", func(v api.Delivery) bool { return v.State == api.DeliveryDelivered })
		if v.Attempts != 1 || v.Failures != 0 {
			t.Errorf("entry charged while waiting for the gateway: %+v", v)
		}
	}
	st, _ = d.status()
	if lr := st.Deliveries.LastRecovery; lr == nil || lr.DeferredNotReady != 5 || lr.Total() != 5 {
		t.Fatalf("last recovery %+v", lr)
	}
	if n := len(sink.requests()); n != 5 {
		t.Fatalf("%d sends, want 5", n)
	}
}

// A corrupt delivery store stops schedd before it starts the gateway: exit 73, which its
// service manager does not restart, with the file named and the way out; it does not
// crash-loop.
func TestE2ECorruptStore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := shortDir(t)
	db := filepath.Join(dir, "schedd.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("garbage ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(t.TempDir(), "pids")
	d := newDaemon(t, daemonOpts{dir: dir, gateway: []string{"pid-file=" + pids}})
	d.cmd.Stdout, d.cmd.Stderr = nil, nil
	out, err := d.cmd.CombinedOutput()
	if code := exitCode(err); code != exitStore || !strings.Contains(string(out), db) || !strings.Contains(string(out), "corrupt") ||
		!strings.Contains(string(out), "move it aside") {
		t.Fatalf("exit %d, want %d naming %s:\n%s", code, exitStore, db, out)
	}
	if readFile(t, pids) != "" {
		t.Fatal("the gateway was started on a corrupt store")
	}
}

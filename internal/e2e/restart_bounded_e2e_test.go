//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// TestE2ERestartRequestsBounded_RINPUT06: 3,000 POST /v1/restart with reasons over 200
// bytes merge into one pending restart whose reply, status (JSON and `schedd status`),
// log lines and STATUS= messages stay small: a count and the last 5 reasons, each cut.
func TestE2ERestartRequestsBounded_RINPUT06(t *testing.T) {
	// Not parallel: it wants the status within a second, which other tests' load could break.
	sm := newFakeServiceManager(t)
	cfg := writeConfig(t, "restart: {delay: 60s, cooldown: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}, env: []string{"NOTIFY_SOCKET=" + sm.path}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	cl := client.New(d.socket)
	defer cl.Close()
	post := func(body string) (int, []byte) {
		t.Helper()
		code, b, err := cl.Raw(t.Context(), http.MethodPost, "/v1/restart", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return code, b
	}

	const n = 3000
	long := strings.Repeat("deploy of a long change ", 10) // 240 bytes
	for i := range n {
		code, b := post(fmt.Sprintf(`{"reason": "%04d %s"}`, i, long))
		if code != http.StatusAccepted || len(b) > 2000 {
			t.Fatalf("request %d: %d, a reply of %d bytes: %.300s", i, code, len(b), b)
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var raw json.RawMessage
	if err := cl.Do(ctx, http.MethodGet, "/v1/status", nil, &raw); err != nil {
		t.Fatal(err)
	}
	var st api.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	p := st.Restart.Pending
	if len(raw) > 16<<10 || time.Since(start) > time.Second || p == nil || p.Requests != n || len(p.Reasons) != 5 ||
		!strings.HasPrefix(p.Reasons[4], fmt.Sprintf("%04d deploy", n-1)) || len(p.Reasons[4]) > 200 {
		t.Fatalf("status of %d bytes in %v: pending %+v", len(raw), time.Since(start), p)
	}
	if code, out, _ := cli("status", "--socket", d.socket); code != 0 || len(out) > 8<<10 || !strings.Contains(out, "3000 requests") {
		t.Fatalf("schedd status: exit %d, %d bytes:\n%s", code, len(out), out)
	}

	code, b := post(`{"reason": "now", "now": true, "wait": true}`)
	var rep api.RestartReply
	if err := json.Unmarshal(b, &rep); err != nil || code != http.StatusOK || len(b) > 4000 || rep.Result == nil ||
		rep.Result.Requests != n+1 || len(rep.Result.Reasons) != 5 || !strings.HasSuffix(rep.Result.Reason, "now (and 2996 earlier requests)") {
		t.Fatalf("restart --now --wait: %d, %d bytes: %.500s", code, len(b), b)
	}
	if !d.waitLog("restart done") {
		t.Fatal("no restart done in the log")
	}
	for line := range strings.Lines(d.out.String()) {
		if len(line) > 2000 {
			t.Fatalf("a log line of %d bytes: %.300s", len(line), line)
		}
	}
	for _, m := range sm.messages() {
		if len(m) > 2000 {
			t.Fatalf("a service manager message of %d bytes: %.300s", len(m), m)
		}
	}
}

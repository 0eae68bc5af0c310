package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func TestReadPayload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(file, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ data, stdin, want string }{
		{"hello", "", "hello"},
		{"@" + file, "", `{"a":1}`},
		{"-", "from stdin\n", "from stdin\n"},
		{"", "", ""},
	} {
		got, err := readPayload(tc.data, strings.NewReader(tc.stdin))
		if err != nil || string(got) != tc.want {
			t.Errorf("readPayload(%q) = %q, %v; want %q", tc.data, got, err, tc.want)
		}
	}
	if _, err := readPayload("@"+file+".missing", nil); err == nil || !strings.Contains(err.Error(), "p.json.missing") {
		t.Errorf("missing file: %v", err)
	}
}

// Header values are secrets: a malformed --header is reported by position, never by value.
func TestParseHeadersHidesValues(t *testing.T) {
	h, err := parseHeaders([]string{"Authorization=Bearer s3cret", "X-A=b=c"})
	if err != nil || h["Authorization"] != "Bearer s3cret" || h["X-A"] != "b=c" {
		t.Fatalf("parseHeaders = %v, %v", h, err)
	}
	_, err = parseHeaders([]string{"X-A=1", "Bearer-s3cret"})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "--header #2") {
		t.Fatalf("bad header: %v", err)
	}
	if code, _, errOut := runMain("deliveries", "enqueue", "--sink", "x", "--data", "y", "--header", "token-s3cret", "--socket", "/nonexistent"); code != exitUsage || strings.Contains(errOut, "s3cret") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestSetPayloadEncoding(t *testing.T) {
	for _, tc := range []struct {
		p      []byte
		base64 bool
	}{
		{[]byte(`{"text": "hi"}`), false},
		{[]byte("line\n"), false},
		{[]byte{0xff, 0x00, 0x01}, true},
		{bytes.Repeat([]byte{1}, 100), true}, // valid UTF-8, but \u0001 would take 6 bytes each
	} {
		var req api.DeliveryRequest
		setPayload(&req, tc.p)
		switch {
		case tc.base64 && (req.DataBase64 == nil || req.Data != nil):
			t.Errorf("%q: want base64, got %+v", tc.p, req)
		case tc.base64:
			if b, _ := base64.StdEncoding.DecodeString(*req.DataBase64); !bytes.Equal(b, tc.p) {
				t.Errorf("%q: base64 round trip %q", tc.p, b)
			}
		case req.Data == nil || *req.Data != string(tc.p):
			t.Errorf("%q: want text, got %+v", tc.p, req)
		}
	}
}

func TestDeliveriesUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"deliveries", "enqueue", "--data", "x"},
		{"deliveries", "enqueue", "--sink", "x"},
		{"deliveries", "list", "--state", "done"},
		{"deliveries", "list", "--limit", "0"},
		{"deliveries", "show"},
		{"deliveries", "show", "abc"},
		{"deliveries", "retry", "1", "2"},
		{"deliveries", "purge", "--older-than", "1h"},
		{"deliveries", "purge", "--dead"},
		{"deliveries", "recover"},
		{"deliveries", "nope"},
	} {
		if code, _, errOut := runMain(append(args, "--socket", "/nonexistent")...); code != exitUsage {
			t.Errorf("%q: exit %d, want 2: %s", args, code, errOut)
		}
	}
}

func TestDeliveriesHelpTeaches(t *testing.T) {
	code, out, _ := runMain("deliveries", "enqueue", "--help")
	for _, want := range []string{"durable", "idempotency key", "@FILE", "--header", "never prints", "Exit status"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("enqueue --help lacks %q (exit %d)", want, code)
		}
	}
}

func TestPrintDeliveries(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	next, done := now.Add(25*time.Second), now.Add(-time.Minute)
	var buf bytes.Buffer
	printDeliveries(&buf, api.DeliveryList{Deliveries: []api.Delivery{
		{ID: 1, State: api.DeliveryPending, Sink: "hook", Key: "k1", Attempts: 1, NextAttemptAt: &next, LastError: "HTTP 503 Service Unavailable"},
		{ID: 2, State: api.DeliveryDead, Sink: "hook", Key: "k2", Attempts: 1, FinishedAt: &done, DeadReason: "permanent", LastError: "HTTP 400 Bad Request: chat not found"},
	}, NextCursor: 2}, now)
	out := buf.String()
	for _, want := range []string{"in 25s", "HTTP 503", "1m0s ago", "permanent: HTTP 400 Bad Request: chat not found", "more: --after 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
}

func TestDeliveriesStatusRows(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	oldest := now.Add(-5 * time.Minute)
	var rows []string
	row := func(k string, v ...string) { rows = append(rows, k+": "+strings.Join(v, " | ")) }
	printDeliveriesSummary(row, &api.Deliveries{
		Pending: 3, Sending: 1, Delivered: 12, Failed: 2, OldestPendingAt: &oldest, Synchronous: "full", DiskFull: true,
		EnqueueError: &api.StoreError{Message: "delivery store disk full", At: now.Add(-time.Minute)},
		LastRecovery: &api.RecoverySummary{Recovered: 2, Interrupted: 1, DeferredBackoff: 4, At: now.Add(-time.Hour)},
	}, now)
	got := strings.Join(rows, "\n")
	want := "deliveries: 3 pending | 1 sending | 12 delivered | 2 dead | oldest 5m0s | synchronous full\n" +
		"  STORE: enqueues refused | since 1m0s ago | delivery store disk full\n" +
		"  last recovery: 2 recovered, 1 interrupted (resent), 4 backing off | 1h0m0s ago"
	if got != want {
		t.Errorf("status rows:\n%s\nwant:\n%s", got, want)
	}
	// A Postgres store shows its host id and whether it reaches its database.
	for connected, health := range map[bool]string{true: "connected", false: "database unreachable"} {
		rows = nil
		printDeliveriesSummary(row, &api.Deliveries{Store: "postgres", HostID: "web-1", Connected: &connected, Synchronous: "server"}, now)
		if want := "deliveries: 0 pending | 0 delivered | 0 dead | store postgres (host web-1, " + health + ")"; rows[0] != want {
			t.Errorf("postgres row:\n%s\nwant:\n%s", rows[0], want)
		}
	}
}

// runMain runs the schedd command line in process (no daemon needed for these tests).
func runMain(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// R-INPUT-03: `deliveries enqueue` refuses a key that a sink could not receive before it
// sends anything (the daemon would refuse it too), naming the flag.
func TestEnqueueKeyCheckedByCLI_RINPUT03(t *testing.T) {
	for key, want := range map[string]string{
		"   ":                    "--key: is blank",
		"a\nb":                   "--key: has the control character U+000A at byte 1",
		strings.Repeat("k", 300): "--key: is 300 bytes long: at most 255",
	} {
		code, _, errOut := runMain("deliveries", "enqueue", "--sink", "hook", "--data", "x", "--key", key, "--socket", "/nonexistent")
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("--key %q: exit %d, %q; want 2 and %q", key, code, errOut, want)
		}
	}
}

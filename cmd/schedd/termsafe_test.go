//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
)

// TestSafe is R-INPUT-11's escaping: control characters, DEL, C1 controls, bidirectional
// overrides and bytes that are not UTF-8 become visible escapes; ordinary Unicode stays,
// and a block of lines keeps its newlines, tabs and CR LF ends, never a lone CR.
func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"deploy-2026 ok":       "deploy-2026 ok",
		"héllo … 日本 ✓":         "héllo … 日本 ✓",
		"\x1b]0;pwned\a":       `\x1b]0;pwned\x07`,
		"a\tb\nc\r\nd":         `a\tb\nc\r\nd`,
		"\x7f\u0085\u009b":     `\x7f\u0085\u009b`,
		"x\x9by\xff":           `x\x9by\xff`,
		"abc\u202edef\u2066":   `abc\u202edef\u2066`,
		"\x00\x01\x08\x0b\x0c": `\x00\x01\x08\x0b\x0c`,
	} {
		if got := safe(in); got != want {
			t.Errorf("safe(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"line 1\nline 2\tcol\n": "line 1\nline 2\tcol\n",
		"dos\r\nline\r\n":       "dos\r\nline\r\n",
		"safe\rEVIL\n\x1b[2J":   `safe\rEVIL` + "\n" + `\x1b[2J`,
		"end\r":                 `end\r`,
	} {
		if got := safeText(in); got != want {
			t.Errorf("safeText(%q) = %q, want %q", in, got, want)
		}
	}
}

// evil is what a hostile client, sink, job or gateway puts in any text schedd reports: a
// title change, a screen clear, a carriage return that overwrites the line, DEL, C1
// controls (CSI among them), a right-to-left override, and ordinary Unicode that must
// stay as it is.
const evil = "k\x1b]0;pwned\a\x1b[2J\rX\n\tY\x7f\u0085\u009b[1m\u202eé…"

// evilShown is how the title change of evil appears, escaped.
const evilShown = `k\x1b]0;pwned\x07`

// fillHostile sets every string reachable from v to evil, every bool to b, every number
// to 1 and every time to at; pointers, slices (two elements) and maps (one entry) are
// made.
func fillHostile(v reflect.Value, b bool, at time.Time, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(evil)
	case reflect.Bool:
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		if depth > 8 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillHostile(p.Elem(), b, at, depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 8 || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillHostile(s.Index(i), b, at, depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillHostile(k, b, at, depth+1)
		fillHostile(e, b, at, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(at))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillHostile(f, b, at, depth+1)
			}
		}
	}
}

func hostile[T any](b bool, at time.Time, fix ...func(*T)) T {
	var v T
	fillHostile(reflect.ValueOf(&v).Elem(), b, at, 0)
	for _, f := range fix {
		f(&v)
	}
	return v
}

// fakeDaemon answers the control API on a socket with canned replies.
type fakeDaemon struct {
	sock    string
	mu      sync.Mutex
	replies map[string]any // "METHOD pattern" -> the reply
}

func startFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	f := &fakeDaemon{sock: filepath.Join(t.TempDir(), "s.sock"), replies: map[string]any{}}
	ln, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, pat := range []string{
		"GET /v1/status", "POST /v1/heartbeat/wake",
		"POST /v1/deliveries", "GET /v1/deliveries", "GET /v1/deliveries/{id}", "POST /v1/deliveries/{id}/retry",
		"DELETE /v1/deliveries/{id}", "POST /v1/recover",
		"GET /v1/cron", "GET /v1/cron/{name}", "GET /v1/cron/{name}/next", "POST /v1/cron/{name}/run",
		"PUT /v1/cron/{name}/enabled",
		"GET /v1/tasks", "GET /v1/tasks/{id}", "POST /v1/tasks/{id}/cancel",
		"POST /v1/restart", "GET /v1/logs",
	} {
		mux.HandleFunc(pat, func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			reply := f.replies[pat]
			f.mu.Unlock()
			if e, ok := reply.(api.ErrorBody); ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				json.NewEncoder(w).Encode(e)
				return
			}
			if r.URL.Query().Get("follow") == "1" {
				w.Header().Set("Content-Type", "application/x-ndjson")
				enc := json.NewEncoder(w)
				for _, l := range reply.(api.Logs).Lines {
					enc.Encode(api.LogEvent{Line: &l})
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(reply)
		})
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f
}

func (f *fakeDaemon) set(pattern string, reply any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies[pattern] = reply
}

// checkTerminalSafe fails when out holds anything a terminal would act on: bytes that are
// not UTF-8, a control character other than newline and tab (and CR before a newline),
// DEL, a C1 control or a bidirectional override.
func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == utf8.RuneError && n == 1,
			r < 0x20 && r != '\n' && r != '\t' && !(r == '\r' && strings.HasPrefix(out[i+1:], "\n")),
			r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			t.Errorf("%s: %U at byte %d reaches the terminal:\n%s", what, r, i, out)
			return
		}
		i += n
	}
}

// TestCLIEscapesControls_RINPUT11: every command's plain output, fed by a daemon whose
// every text field (keys, reasons, job names, errors, the gateway's status text and
// output...) holds terminal escapes and control characters, shows them as visible
// escapes and sends none of them to the terminal; errors on stderr too. --json prints
// the daemon's JSON unchanged.
func TestCLIEscapesControls_RINPUT11(t *testing.T) {
	f := startFakeDaemon(t)
	now := time.Now()
	for _, b := range []bool{true, false} {
		at := now.Add(-90 * time.Second)
		if !b {
			at = now.Add(90 * time.Second) // times to come: next runs, due dates
		}
		status := hostile[api.Status](b, at)
		runReply := hostile(b, at, func(r *api.CronRunReply) { r.Task.State = api.TaskFailed })
		logs := hostile[api.Logs](b, at)
		f.set("GET /v1/status", status)
		f.set("POST /v1/heartbeat/wake", hostile[api.HeartbeatWakeReply](b, at))
		f.set("POST /v1/deliveries", hostile[api.EnqueueReply](b, at))
		f.set("GET /v1/deliveries", hostile[api.DeliveryList](b, at))
		f.set("GET /v1/deliveries/{id}", hostile[api.Delivery](b, at))
		f.set("POST /v1/deliveries/{id}/retry", hostile[api.Delivery](b, at))
		f.set("DELETE /v1/deliveries/{id}", api.ErrorBody{Error: api.Error{Code: "conflict", Message: evil}})
		f.set("POST /v1/recover", hostile[api.RecoveryReport](b, at))
		f.set("GET /v1/cron", hostile[api.Cron](b, at))
		f.set("GET /v1/cron/{name}", hostile[api.CronJobDetail](b, at))
		f.set("GET /v1/cron/{name}/next", hostile[api.CronNextReply](b, at))
		f.set("POST /v1/cron/{name}/run", runReply)
		f.set("PUT /v1/cron/{name}/enabled", hostile[api.CronEnabledReply](b, at))
		f.set("GET /v1/tasks", hostile[api.TaskList](b, at))
		f.set("GET /v1/tasks/{id}", hostile[api.Task](b, at))
		f.set("POST /v1/tasks/{id}/cancel", hostile[api.TaskCancelReply](b, at))
		f.set("GET /v1/logs", logs)

		restarts := []api.RestartReply{
			hostile[api.RestartReply](b, at),
			hostile(b, at, func(r *api.RestartReply) { r.Daemon, r.Result.OK = nil, false }),
		}
		type run struct {
			args    []string
			json    any               // with --json: the reply, printed as it came
			restart *api.RestartReply // the reply to POST /v1/restart
		}
		runs := []run{
			{args: []string{"status"}, json: status},
			{args: []string{"heartbeat", "status"}, json: status.Heartbeat},
			{args: []string{"heartbeat", "wake"}},
			{args: []string{"deliveries", "enqueue", "--sink", "s", "--data", "x"}, json: f.replies["POST /v1/deliveries"]},
			{args: []string{"deliveries", "list"}, json: f.replies["GET /v1/deliveries"]},
			{args: []string{"deliveries", "show", "1"}, json: f.replies["GET /v1/deliveries/{id}"]},
			{args: []string{"deliveries", "retry", "1"}},
			{args: []string{"deliveries", "drop", "1"}},
			{args: []string{"deliveries", "recover", "--dry-run"}, json: f.replies["POST /v1/recover"]},
			{args: []string{"cron", "list"}, json: f.replies["GET /v1/cron"]},
			{args: []string{"cron", "show", "n"}, json: f.replies["GET /v1/cron/{name}"]},
			{args: []string{"cron", "next", "n"}, json: f.replies["GET /v1/cron/{name}/next"]},
			{args: []string{"cron", "run", "n"}, json: runReply},
			{args: []string{"cron", "enable", "n"}},
			{args: []string{"tasks", "list"}, json: f.replies["GET /v1/tasks"]},
			{args: []string{"tasks", "show", "1"}, json: f.replies["GET /v1/tasks/{id}"]},
			{args: []string{"tasks", "cancel", "1"}, json: f.replies["POST /v1/tasks/{id}/cancel"]},
			{args: []string{"logs"}},
			{args: []string{"logs", "-f"}},
		}
		for _, r := range restarts {
			runs = append(runs, run{[]string{"restart"}, r, &r})
		}
		for _, r := range runs {
			if r.restart != nil {
				f.set("POST /v1/restart", *r.restart)
			}
			what := strings.Join(r.args, " ")
			_, out, errOut := cli(append(r.args, "--socket", f.sock)...)
			checkTerminalSafe(t, what+" (stdout)", out)
			checkTerminalSafe(t, what+" (stderr)", errOut)
			if !strings.Contains(out+errOut, evilShown) {
				t.Errorf("%s: the hostile text is not shown escaped:\n%s%s", what, out, errOut)
			}
			if r.json == nil {
				continue
			}
			_, out, errOut = cli(append(r.args, "--socket", f.sock, "--json")...)
			raw, err := json.Marshal(r.json)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			json.Indent(&want, raw, "", "  ")
			want.WriteByte('\n')
			if out != want.String() {
				t.Errorf("%s --json changed the JSON: %s\ngot:\n%q\nwant:\n%q", what, errOut, out, want.String())
			}
		}
		// logs --json: one JSON object per line, as the daemon sent it.
		_, out, _ := cli("logs", "--json", "--socket", f.sock)
		var want bytes.Buffer
		for _, l := range logs.Lines {
			json.NewEncoder(&want).Encode(l)
		}
		if out != want.String() {
			t.Errorf("logs --json changed the JSON:\n%q\nwant:\n%q", out, want.String())
		}
	}
}

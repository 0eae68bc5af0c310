package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// hostile is text a job name, a reason or a log line could carry that must come out as
// text, never as markup or script.
const hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&\x1b[31m\x00\u2028</script>"

// fakeViews is a daemon's views with fixed answers.
type fakeViews struct {
	st    api.Status
	tasks map[string][]api.Task
	dead  []api.Delivery
	logs  []api.LogLine
	err   error // of DeadLetters
}

func (f *fakeViews) Status(context.Context) api.Status { return f.st }
func (f *fakeViews) Tasks(_ context.Context, job string, limit int) ([]api.Task, error) {
	ts := f.tasks[job]
	return ts[:min(len(ts), limit)], nil
}
func (f *fakeViews) Task(_ context.Context, id int64) (api.Task, error) {
	for _, ts := range f.tasks {
		for _, t := range ts {
			if t.ID == id {
				return t, nil
			}
		}
	}
	return api.Task{}, ErrNotFound
}
func (f *fakeViews) DeadLetters(context.Context, int) ([]api.Delivery, error) { return f.dead, f.err }
func (f *fakeViews) Logs(n int) []api.LogLine                                 { return f.logs[max(len(f.logs)-n, 0):] }

// hostileViews carry hostile text in every place the page shows text from.
func hostileViews() *fakeViews {
	at := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	code := 1
	return &fakeViews{
		st: api.Status{
			Schedd: api.Daemon{PID: 10, Version: "v1" + hostile, StartedAt: at},
			Gateway: api.Gateway{State: api.GatewayReady, PID: 42, StartedAt: at, ReadySince: at, StatusText: hostile,
				LastExit: &api.Exit{Reason: api.ExitExited, Code: &code, At: at, Error: hostile},
				History: []api.GatewayRun{{StartedAt: at, PID: 41, Exit: &api.Exit{Reason: api.ExitExited, Code: &code, At: at, Error: hostile}},
					{StartedAt: at, PID: 42, ReadyAt: &at}}},
			Heartbeat:  &api.Heartbeat{Enabled: true, Agents: []api.AgentStatus{{ID: "main" + hostile, Enabled: true, Last: &api.HeartbeatRun{Status: api.RunFailed, Reason: hostile, At: at}}}},
			Deliveries: &api.Deliveries{Failed: 1, Store: "sqlite", StoreState: "open"},
			Cron:       &api.Cron{Jobs: []api.CronJob{{Name: "job" + hostile, Schedule: "every 1m", Last: &api.CronLast{State: api.TaskFailed, Reason: hostile, TaskID: 7, At: at}}}},
		},
		tasks: map[string][]api.Task{"job" + hostile: {{ID: 7, Job: "job" + hostile, State: api.TaskFailed, Error: hostile, Output: hostile, Reason: hostile, DueAt: at, QueuedAt: at}}},
		dead:  []api.Delivery{{ID: 3, Sink: "hook", Key: hostile, State: api.DeliveryDead, DeadReason: hostile, LastError: hostile}},
		logs:  []api.LogLine{{Seq: 1, Time: at, PID: 42, Stream: "stderr", Text: hostile}},
	}
}

func get(t *testing.T, h http.Handler, method, path string) (int, http.Header, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, w.Result().Header, string(b)
}

// TestPageEscapes: hostile text in the status, a job's name and tasks, a dead letter's
// reason and a log line is in the page only escaped: no tag of it opens, no script element
// of it ends early, and the control characters are not raw.
func TestPageEscapes(t *testing.T) {
	m := New("v", status(api.Status{}))
	m.ServePage(hostileViews())
	h := m.Handler()
	for _, path := range []string{"/", "/tasks/7", "/page.json", "/status.json"} {
		code, hdr, body := get(t, h, "GET", path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d: %s", path, code, body)
		}
		for _, bad := range []string{"<script>alert", "<img", "\x1b", "\x00", "\u2028"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: the body holds %q unescaped:\n%s", path, bad, body)
			}
		}
		if n := strings.Count(body, "</script>"); n != strings.Count(body, "<script") {
			t.Errorf("GET %s: %d </script> for %d <script: a hostile one closes an element", path, n, strings.Count(body, "<script"))
		}
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	// The task page shows the hostile text as text, escaped by html/template.
	_, _, body := get(t, h, "GET", "/tasks/7")
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;&amp;\\x1b[31m\\x00\\u2028&lt;/script&gt;", `id="task-state" class="state" data-state="failed"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /tasks/7 lacks %q:\n%s", want, body)
		}
	}
	// The page carries its first document as JSON that reads back whole.
	_, _, body = get(t, h, "GET", "/")
	_, data, ok := strings.Cut(body, `<script type="application/json" id="page-data">`)
	data, _, ok2 := strings.Cut(data, "</script>")
	var p Page
	if !ok || !ok2 {
		t.Fatalf("no page-data element:\n%s", body)
	}
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		t.Fatalf("page-data: %v\n%s", err, data)
	}
	if p.Logs[0].Text != hostile || p.Dead[0].DeadReason != hostile || p.Tasks["job"+hostile][0].Error != hostile {
		t.Errorf("page-data does not read back as given: %+v", p)
	}
}

// TestStatusJSON: /status.json is the status document byte for byte as the control API
// writes it for `schedd status --json`, and /page.json holds the same document.
func TestStatusJSON(t *testing.T) {
	v := hostileViews()
	dsn := "postgres://schedd:hunter2@db/schedd"
	v.st.Deliveries = &api.Deliveries{Store: "postgres", HostID: "h1", Sinks: []string{"hook"}} // no DSN: the status never holds it
	m := New("v", status(api.Status{}))
	m.ServePage(v)
	h := m.Handler()
	want, err := json.Marshal(v.st)
	if err != nil {
		t.Fatal(err)
	}
	code, hdr, body := get(t, h, "GET", "/status.json")
	if code != 200 || hdr.Get("Content-Type") != "application/json" || body != string(want)+"\n" {
		t.Errorf("GET /status.json = %d %s\n%s\nwant\n%s", code, hdr.Get("Content-Type"), body, want)
	}
	if strings.Contains(body, "hunter2") || strings.Contains(body, dsn) {
		t.Error("a secret in status.json")
	}
	_, _, body = get(t, h, "GET", "/page.json")
	var p struct {
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Status, want) {
		t.Errorf("page.json's status:\n%s\nwant\n%s", p.Status, want)
	}
}

// TestPageReadOnly: the page answers GET and HEAD only; a task that does not exist is 404,
// a bad id 400; without ServePage there is no page.
func TestPageReadOnly(t *testing.T) {
	m := New("v", status(api.Status{}))
	m.ServePage(hostileViews())
	h := m.Handler()
	for _, path := range []string{"/", "/page.json", "/status.json", "/tasks/7", "/page.js", "/page.css"} {
		if code, _, _ := get(t, h, "HEAD", path); code != http.StatusOK {
			t.Errorf("HEAD %s = %d", path, code)
		}
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if code, _, _ := get(t, h, method, path); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s = %d, want 405", method, path, code)
			}
		}
	}
	for path, want := range map[string]int{"/tasks/8": 404, "/tasks/x": 400, "/tasks/0": 400, "/nothing": 404} {
		if code, _, _ := get(t, h, "GET", path); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
	if code, _, _ := get(t, New("v", status(api.Status{})).Handler(), "GET", "/"); code != http.StatusNotFound {
		t.Errorf("GET / without a page = %d, want 404", code)
	}
}

// TestPageDocument: /page.json holds each job's last tasks, the dead letters and the last
// log lines, bounded; a view that fails is named in errors and the rest is still there.
func TestPageDocument(t *testing.T) {
	v := hostileViews()
	for i := range PageLogLines + 5 {
		v.logs = append(v.logs, api.LogLine{Seq: uint64(i + 2), Text: "line"})
	}
	v.err = errors.New("store unreadable")
	m := New("v", status(api.Status{}))
	m.ServePage(v)
	_, _, body := get(t, m.Handler(), "GET", "/page.json")
	var p Page
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Logs) != PageLogLines || p.Logs[len(p.Logs)-1].Seq != uint64(PageLogLines+6) {
		t.Errorf("%d log lines ending at seq %d, want the last %d", len(p.Logs), p.Logs[len(p.Logs)-1].Seq, PageLogLines)
	}
	if ts := p.Tasks["job"+hostile]; len(ts) != 1 || ts[0].ID != 7 {
		t.Errorf("tasks %+v", p.Tasks)
	}
	if !reflect.DeepEqual(p.Errors, []string{"dead letters: store unreadable"}) || p.Dead == nil {
		t.Errorf("errors %q, dead %v: want the failed read named and an empty list", p.Errors, p.Dead)
	}
}

package metrics

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/schedd/schedd/internal/api"
)

// How much the status page shows.
const (
	// PageTasks is how many of each cron job's last tasks the page's strip shows.
	PageTasks = 20
	// PageDeadLetters is how many dead letters the page lists.
	PageDeadLetters = 50
	// PageLogLines is how many of the gateway's last output lines the page shows.
	PageLogLines = 50
	// pageLimit bounds the views' reads for one request.
	pageLimit = 5 * time.Second
)

// ErrNotFound is what Views.Task returns for a task that does not exist.
var ErrNotFound = errors.New("not found")

// Views are the read-only views of the daemon the status page shows. The daemon builds
// them from the same functions as its control API, so the page shows what `schedd status`,
// `schedd tasks`, `schedd deliveries list` and `schedd logs` show. Each must honour ctx.
type Views interface {
	// Status is the document of `schedd status --json`.
	Status(ctx context.Context) api.Status
	// Tasks are a cron job's last tasks, newest first, at most limit.
	Tasks(ctx context.Context, job string, limit int) ([]api.Task, error)
	// Task is one task; ErrNotFound when there is none with that id.
	Task(ctx context.Context, id int64) (api.Task, error)
	// DeadLetters are the dead-lettered deliveries, oldest first, at most limit.
	DeadLetters(ctx context.Context, limit int) ([]api.Delivery, error)
	// Logs are the gateway's last n output lines, oldest first.
	Logs(n int) []api.LogLine
}

// Page is the reply of GET /page.json, what the status page shows: the status document and
// what it does not hold.
type Page struct {
	At     time.Time  `json:"at"` // when it was read, for the ages the page shows
	Status api.Status `json:"status"`
	// Tasks are each configured job's last tasks (at most PageTasks), newest first.
	Tasks map[string][]api.Task `json:"tasks"`
	// Dead are the dead letters, oldest first (at most PageDeadLetters).
	Dead []api.Delivery `json:"dead"`
	Logs []api.LogLine  `json:"logs"`
	// Errors are the reads that failed (the store cannot be read): the rest is shown.
	Errors []string `json:"errors,omitempty"`
}

//go:embed page.html task.html page.js page.css
var pageFiles embed.FS

var pageTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"clean": visible,
	// when writes a time (or a *time.Time) in UTC, "" for none.
	"when": func(v any) string {
		var t time.Time
		switch v := v.(type) {
		case time.Time:
			t = v
		case *time.Time:
			if v != nil {
				t = *v
			}
		}
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
}).ParseFS(pageFiles, "page.html", "task.html"))

// ServePage adds the status page to Handler: GET / (the page), /page.json (what it shows),
// /status.json (the status document), /tasks/{id} (one cron task) and the page's script
// and style. It is read only. Call it before Serve.
func (m *Metrics) ServePage(v Views) { m.views = v }

// pageRoutes adds the status page's endpoints to mux. A GET pattern answers HEAD too; any
// other method on these paths is 405.
func (m *Metrics) pageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", m.servePage)
	mux.HandleFunc("GET /page.json", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), pageLimit)
		defer cancel()
		writeJSON(w, http.StatusOK, m.page(ctx))
	})
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), pageLimit)
		defer cancel()
		writeJSON(w, http.StatusOK, m.views.Status(ctx))
	})
	mux.HandleFunc("GET /tasks/{id}", m.serveTask)
	for _, f := range []struct{ path, typ string }{{"page.js", "text/javascript; charset=utf-8"}, {"page.css", "text/css; charset=utf-8"}} {
		b, err := pageFiles.ReadFile(f.path)
		if err != nil {
			panic(err) // embedded above
		}
		mux.HandleFunc("GET /"+f.path, func(w http.ResponseWriter, r *http.Request) {
			pageHeaders(w, f.typ)
			_, _ = w.Write(b)
		})
	}
}

// page reads what the status page shows.
func (m *Metrics) page(ctx context.Context) Page {
	v := m.views
	p := Page{At: time.Now(), Status: v.Status(ctx), Tasks: map[string][]api.Task{}, Dead: []api.Delivery{}}
	if c := p.Status.Cron; c != nil {
		for _, j := range c.Jobs {
			ts, err := v.Tasks(ctx, j.Name, PageTasks)
			if err != nil {
				p.Errors = append(p.Errors, "tasks of "+j.Name+": "+err.Error())
				continue
			}
			p.Tasks[j.Name] = nonNil(ts)
		}
	}
	dead, err := v.DeadLetters(ctx, PageDeadLetters)
	if err != nil {
		p.Errors = append(p.Errors, "dead letters: "+err.Error())
	}
	p.Dead = nonNil(dead)
	p.Logs = nonNil(v.Logs(PageLogLines))
	return p
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (m *Metrics) servePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), pageLimit)
	defer cancel()
	p := m.page(ctx)
	pageHeaders(w, "text/html; charset=utf-8")
	_ = pageTemplates.ExecuteTemplate(w, "page.html", p)
}

func (m *Metrics) serveTask(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		pageError(w, http.StatusBadRequest, "id: want a task id (a positive number), got "+strconv.Quote(r.PathValue("id")))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageLimit)
	defer cancel()
	t, err := m.views.Task(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		pageError(w, http.StatusNotFound, "no task "+strconv.FormatInt(id, 10))
		return
	case err != nil:
		pageError(w, http.StatusServiceUnavailable, "task "+strconv.FormatInt(id, 10)+": "+err.Error())
		return
	}
	pageHeaders(w, "text/html; charset=utf-8")
	_ = pageTemplates.ExecuteTemplate(w, "task.html", t)
}

// pageHeaders are the headers of every reply of the page: nothing is cached, and the
// browser runs no script and loads nothing but the page's own files from this listener.
func pageHeaders(w http.ResponseWriter, typ string) {
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "+
		"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
}

// pageError answers a plain text error.
func pageError(w http.ResponseWriter, code int, msg string) {
	pageHeaders(w, "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}

// visible writes the control characters of s (but tabs and newlines) as \xNN or \uNNNN,
// so that text from a gateway or a job shows what it holds and cannot move a terminal's
// cursor when the page is saved and printed. The page's script does the same.
func visible(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\t' && r != '\n' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029')
}

// writeJSON writes v as compact JSON, as the control API writes its replies.
func writeJSON(w http.ResponseWriter, code int, v any) {
	pageHeaders(w, "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

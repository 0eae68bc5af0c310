package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron"
)

// Bounds of the cron endpoints' numbers.
const (
	defaultNextCount = 5
	maxNextCount     = 1000
	maxTaskPage      = 1000
)

// Cron is what the cron and task endpoints need of cron: a cron.Service on one host, a
// cron.Fleet on a shared PostgreSQL database.
type Cron interface {
	Status() api.Cron
	Job(ctx context.Context, name string) (api.CronJobDetail, error)
	Next(ctx context.Context, name string, from time.Time, n int) (api.CronNextReply, error)
	RunNow(ctx context.Context, name string, wait bool) (api.Task, error)
	SetEnabled(ctx context.Context, name string, on bool) (bool, error)
	Tasks(ctx context.Context, f cron.TaskFilter) (api.TaskList, error)
	Task(ctx context.Context, id int64) (api.Task, error)
	Cancel(ctx context.Context, id int64) (api.Task, error)
}

// AddCron adds the cron and task endpoints, served by svc.
func (s *Server) AddCron(svc Cron) { cronAPI{svc: svc}.routes(s) }

// cronAPI serves the cron and task endpoints of the control API.
type cronAPI struct{ svc Cron }

func (a cronAPI) routes(srv *Server) {
	srv.Handle("GET /v1/cron", a.list)
	srv.Handle("GET /v1/cron/{name}", a.job)
	srv.Handle("GET /v1/cron/{name}/next", a.next)
	srv.HandleLong("POST /v1/cron/{name}/run", a.run) // with wait: until the task has ended
	srv.Handle("PUT /v1/cron/{name}/enabled", a.enabled)
	srv.Handle("GET /v1/tasks", a.tasks)
	srv.Handle("GET /v1/tasks/{id}", a.task)
	srv.HandleLong("POST /v1/tasks/{id}/cancel", a.cancel) // until the command has stopped
}

func (a cronAPI) list(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, a.svc.Status())
}

func (a cronAPI) job(w http.ResponseWriter, r *http.Request) {
	d, err := a.svc.Job(r.Context(), r.PathValue("name"))
	reply(w, d, err)
}

// reply answers v, or the error of the cron service that came instead.
func reply[T any](w http.ResponseWriter, v T, err error) {
	if err != nil {
		cronError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, v)
}

func (a cronAPI) next(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	count, from := defaultNextCount, time.Now()
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxNextCount {
			badRequest(w, "count: want a number from 1 to %d, got %q", maxNextCount, v)
			return
		}
		count = n
	}
	if v := q.Get("from"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			badRequest(w, "from: want an RFC 3339 time like 2027-03-14T00:00:00-05:00, got %q", v)
			return
		}
		from = t
	}
	next, err := a.svc.Next(r.Context(), r.PathValue("name"), from, count)
	reply(w, next, err)
}

func (a cronAPI) run(w http.ResponseWriter, r *http.Request) {
	var req api.CronRunRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	t, err := a.svc.RunNow(r.Context(), r.PathValue("name"), req.Wait)
	if err != nil {
		cronError(w, err)
		return
	}
	code := http.StatusAccepted
	if req.Wait {
		code = http.StatusOK
	}
	WriteJSON(w, code, api.CronRunReply{Task: t})
}

func (a cronAPI) enabled(w http.ResponseWriter, r *http.Request) {
	var req api.CronEnabledRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	if req.Enabled == nil {
		badRequest(w, `enabled: is required: {"enabled": true} or {"enabled": false}`)
		return
	}
	name := r.PathValue("name")
	changed, err := a.svc.SetEnabled(r.Context(), name, *req.Enabled)
	if err != nil {
		cronError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, api.CronEnabledReply{Name: name, Enabled: *req.Enabled, Changed: changed})
}

func (a cronAPI) tasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := cron.TaskFilter{Job: q.Get("job"), State: api.TaskState(q.Get("state")), Limit: 100}
	if f.State != "" && !f.State.Valid() {
		badRequest(w, "state: want queued, running, succeeded, failed, timed_out, cancelled, skipped or lost, got %q", f.State)
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTaskPage {
			badRequest(w, "limit: want a number from 1 to %d, got %q", maxTaskPage, v)
			return
		}
		f.Limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			badRequest(w, "before: want the next_cursor of the previous page, got %q", v)
			return
		}
		f.Before = n
	}
	list, err := a.svc.Tasks(r.Context(), f)
	if err != nil {
		cronError(w, err)
		return
	}
	// A job no longer configured keeps its history; a name with neither is a mistake.
	if f.Job != "" && len(list.Tasks) == 0 && f.Before == 0 {
		if _, err := a.svc.Job(r.Context(), f.Job); errors.Is(err, cron.ErrUnknownJob) {
			WriteError(w, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("job: no cron job %q is configured or has tasks", f.Job))
			return
		}
	}
	WriteJSON(w, http.StatusOK, list)
}

func (a cronAPI) task(w http.ResponseWriter, r *http.Request) {
	if id, ok := taskID(w, r); ok {
		t, err := a.svc.Task(r.Context(), id)
		reply(w, t, err)
	}
}

// cancel cancels a queued or running task and answers once it has ended; a task that had
// already ended is answered as it is, with cancelled false.
func (a cronAPI) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	t, err := a.svc.Cancel(r.Context(), id)
	if err != nil && !errors.Is(err, cron.ErrNotActive) {
		cronError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, api.TaskCancelReply{Task: t, Cancelled: err == nil})
}

// taskID reads the {id} of the path; false after writing the 400 reply.
func taskID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		badRequest(w, "id: want a task id (a positive number), got %q", v)
		return 0, false
	}
	return id, true
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	WriteError(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf(format, args...))
}

// cronError answers an error of the cron service, naming the field it is about.
func cronError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, cron.ErrUnknownJob):
		WriteError(w, http.StatusNotFound, api.CodeNotFound, "name: "+err.Error())
	case errors.Is(err, cron.ErrUnknownTask):
		WriteError(w, http.StatusNotFound, api.CodeNotFound, "id: "+err.Error())
	case errors.Is(err, cron.ErrNotLeader):
		WriteError(w, http.StatusConflict, api.CodeConflict, err.Error())
	case errors.Is(err, cron.ErrStopped):
		WriteError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "schedd is stopping: "+err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		WriteError(w, http.StatusServiceUnavailable, api.CodeTimeout, err.Error())
	default:
		WriteError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
	}
}

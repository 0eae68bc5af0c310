package server

import (
	"net/http"

	"github.com/schedd/schedd/internal/api"
)

// Route is one endpoint of the control API: what it takes and what it answers. Routes lists
// them all: the server registers them (TestRoutesMatchServer holds the two together), the
// client has a method for each (TestEveryRouteHasAMethod), and docs/openapi.yaml is made
// from it with the request and reply types of package api (TestOpenAPI, in that package).
type Route struct {
	Method, Path string
	Summary      string
	// Query lists the query parameters; the path's {name} parameters are taken from Path.
	Query []Param
	// Body is the request body's type (a zero value); nil for none. Alt is another form
	// of the body the same endpoint takes (an array of entries for POST /v1/deliveries).
	Body, Alt any
	// Replies are the successful replies by status code, each a zero value of its type.
	Replies map[int]any
	// Errors are the error statuses the endpoint may answer (always with ErrorBody), beyond
	// 400 for a malformed request, 413 for a body over the limit and 500.
	Errors []int
	// Stream says that when asked (logs' follow parameter, recover's progress field) the
	// reply is newline-delimited JSON, one Stream value a line.
	Stream any
}

// Param is a query parameter of a Route.
type Param struct {
	Name, Type, Description string
}

// Routes are the endpoints of the control API, in the order the documentation lists them.
var Routes = []Route{
	{Method: http.MethodGet, Path: "/v1/status", Summary: "The status document: the gateway, the restart coordinator, heartbeats, deliveries and cron.",
		Replies: map[int]any{200: api.Status{}}},
	{Method: http.MethodPost, Path: "/v1/restart", Summary: "Request a restart of the gateway (coalesced, rate-limited, deferred until idle), or with daemon a replacement of schedd itself.",
		Body: api.RestartRequest{}, Replies: map[int]any{202: api.RestartReply{}, 200: api.RestartReply{}}, Errors: []int{409, 503}},
	{Method: http.MethodPost, Path: "/v1/stop", Summary: "Stop the daemon, like SIGTERM.",
		Replies: map[int]any{202: api.StopReply{}}},
	{Method: http.MethodPost, Path: "/v1/heartbeat/wake", Summary: "Wake an agent's heartbeat now (coalesced with other wakes).",
		Body: api.HeartbeatWakeRequest{}, Replies: map[int]any{202: api.HeartbeatWakeReply{}}, Errors: []int{404, 409}},
	{Method: http.MethodPut, Path: "/v1/heartbeat/enabled", Summary: "Turn every heartbeat on or off; the switch is saved before the reply.",
		Body: api.HeartbeatEnabledRequest{}, Replies: map[int]any{200: api.HeartbeatEnabledReply{}}},
	{Method: http.MethodPost, Path: "/v1/deliveries", Summary: "Enqueue a delivery (201 once on disk, 200 for a key seen before), or with an array up to 1,000 of them in one commit.",
		Body: api.DeliveryRequest{}, Alt: []api.DeliveryRequest{}, Replies: map[int]any{201: api.EnqueueReply{}, 200: api.EnqueueReply{}},
		Errors: []int{409, 503, 507}},
	{Method: http.MethodGet, Path: "/v1/deliveries", Summary: "List stored deliveries, oldest first, a page at a time.",
		Query: []Param{
			{"state", "string", "only entries in this state: pending, sending, delivered or dead"},
			{"sink", "string", "only entries for this sink"},
			{"limit", "integer", "entries in a page, 1 to 1000 (default 100)"},
			{"cursor", "integer", "the next_cursor of the previous page"},
		},
		Replies: map[int]any{200: api.DeliveryList{}}, Errors: []int{503}},
	{Method: http.MethodGet, Path: "/v1/deliveries/{id}", Summary: "One delivery, with its payload.",
		Replies: map[int]any{200: api.Delivery{}}, Errors: []int{404, 503}},
	{Method: http.MethodDelete, Path: "/v1/deliveries/{id}", Summary: "Drop a delivery (409 while it is being sent, or once delivered).",
		Replies: map[int]any{200: api.DropReply{}}, Errors: []int{404, 409, 503}},
	{Method: http.MethodPost, Path: "/v1/deliveries/{id}/retry", Summary: "Put a dead letter back to pending, due now.",
		Replies: map[int]any{200: api.Delivery{}}, Errors: []int{404, 409, 503}},
	{Method: http.MethodPost, Path: "/v1/deliveries/purge", Summary: "Remove dead or delivered entries that finished more than older_than ago.",
		Body: api.PurgeRequest{}, Replies: map[int]any{200: api.PurgeReply{}}, Errors: []int{503}},
	{Method: http.MethodPost, Path: "/v1/recover", Summary: "Report what a recovery pass would do, changing nothing (dry_run must be true).",
		Body: api.RecoverRequest{}, Replies: map[int]any{200: api.RecoveryReport{}}, Errors: []int{503}, Stream: api.RecoverProgress{}},
	{Method: http.MethodGet, Path: "/v1/cron", Summary: "The cron block of the status: every job and the job queue.",
		Replies: map[int]any{200: api.Cron{}}},
	{Method: http.MethodGet, Path: "/v1/cron/{name}", Summary: "One job: its status, settings, next runs and history.",
		Replies: map[int]any{200: api.CronJobDetail{}}, Errors: []int{404, 503}},
	{Method: http.MethodGet, Path: "/v1/cron/{name}/next", Summary: "A job's next run times, in its time zone.",
		Query: []Param{
			{"count", "integer", "how many, 1 to 1000 (default 5)"},
			{"from", "string", "the instant to count from, RFC 3339 (default now)"},
		},
		Replies: map[int]any{200: api.CronNextReply{}}, Errors: []int{404, 503}},
	{Method: http.MethodPost, Path: "/v1/cron/{name}/run", Summary: "Run a job now: 202 with the task as queued, running or skipped; with wait, 200 with the task as it ended.",
		Body: api.CronRunRequest{}, Replies: map[int]any{202: api.CronRunReply{}, 200: api.CronRunReply{}}, Errors: []int{404, 409, 503}},
	{Method: http.MethodPut, Path: "/v1/cron/{name}/enabled", Summary: "Turn one job on or off; the switch is saved before the reply.",
		Body: api.CronEnabledRequest{}, Replies: map[int]any{200: api.CronEnabledReply{}}, Errors: []int{404, 503}},
	{Method: http.MethodGet, Path: "/v1/tasks", Summary: "Cron tasks, newest first, a page at a time.",
		Query: []Param{
			{"job", "string", "only the tasks of this job"},
			{"state", "string", "only tasks in this state"},
			{"limit", "integer", "tasks in a page, 1 to 1000 (default 100)"},
			{"before", "integer", "the next_cursor of the previous page"},
		},
		Replies: map[int]any{200: api.TaskList{}}, Errors: []int{404, 503}},
	{Method: http.MethodGet, Path: "/v1/tasks/{id}", Summary: "One task.",
		Replies: map[int]any{200: api.Task{}}, Errors: []int{404, 503}},
	{Method: http.MethodPost, Path: "/v1/tasks/{id}/cancel", Summary: "Cancel a queued or running task; the reply comes once it has ended.",
		Replies: map[int]any{200: api.TaskCancelReply{}}, Errors: []int{404, 409, 503}},
	{Method: http.MethodGet, Path: "/v1/logs", Summary: "The gateway's last output lines; with follow=1, those lines and then each new one as newline-delimited JSON.",
		Query: []Param{
			{"n", "integer", "how many of the last lines (every kept line without it)"},
			{"follow", "integer", "1: keep the reply open and send each new line"},
		},
		Replies: map[int]any{200: api.Logs{}}, Stream: api.LogEvent{}},
}

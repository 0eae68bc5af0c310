package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// One method per route of server.Routes (Status and StatusRaw are in client.go): the only
// place besides the server that writes the API's paths. A route without a method here
// fails TestEveryRouteHasAMethod.

// Restart asks for a restart: POST /v1/restart.
func (c *Client) Restart(ctx context.Context, req api.RestartRequest) (api.RestartReply, error) {
	var r api.RestartReply
	err := c.Do(ctx, http.MethodPost, "/v1/restart", req, &r)
	return r, err
}

// Stop asks the daemon to stop: POST /v1/stop.
func (c *Client) Stop(ctx context.Context) (api.StopReply, error) {
	var r api.StopReply
	err := c.Do(ctx, http.MethodPost, "/v1/stop", nil, &r)
	return r, err
}

// HeartbeatWake wakes heartbeats now: POST /v1/heartbeat/wake.
func (c *Client) HeartbeatWake(ctx context.Context, req api.HeartbeatWakeRequest) (api.HeartbeatWakeReply, error) {
	var r api.HeartbeatWakeReply
	err := c.Do(ctx, http.MethodPost, "/v1/heartbeat/wake", req, &r)
	return r, err
}

// SetHeartbeatEnabled turns every heartbeat on or off: PUT /v1/heartbeat/enabled.
func (c *Client) SetHeartbeatEnabled(ctx context.Context, on bool) (api.HeartbeatEnabledReply, error) {
	var r api.HeartbeatEnabledReply
	err := c.Do(ctx, http.MethodPut, "/v1/heartbeat/enabled", api.HeartbeatEnabledRequest{Enabled: &on}, &r)
	return r, err
}

// Enqueue stores one delivery: POST /v1/deliveries.
func (c *Client) Enqueue(ctx context.Context, req api.DeliveryRequest) (api.EnqueueReply, error) {
	var r api.EnqueueReply
	err := c.Do(ctx, http.MethodPost, "/v1/deliveries", req, &r)
	return r, err
}

// EnqueueBatch stores up to api.MaxBatch deliveries in one commit: POST /v1/deliveries
// with an array.
func (c *Client) EnqueueBatch(ctx context.Context, reqs []api.DeliveryRequest) (api.BatchReply, error) {
	var r api.BatchReply
	if reqs == nil {
		reqs = []api.DeliveryRequest{} // an array, not null
	}
	err := c.Do(ctx, http.MethodPost, "/v1/deliveries", reqs, &r)
	return r, err
}

// DeliveryQuery selects a page of GET /v1/deliveries; zero values are left out.
type DeliveryQuery struct {
	State  api.DeliveryState
	Sink   string
	Limit  int
	Cursor int64 // the NextCursor of the previous page
}

func (q DeliveryQuery) values() url.Values {
	return pageValues(map[string]string{"state": string(q.State), "sink": q.Sink}, q.Limit, "cursor", q.Cursor)
}

// Deliveries lists stored deliveries, a page at a time: GET /v1/deliveries.
func (c *Client) Deliveries(ctx context.Context, q DeliveryQuery) (api.DeliveryList, error) {
	var r api.DeliveryList
	err := c.Do(ctx, http.MethodGet, withQuery("/v1/deliveries", q.values()), nil, &r)
	return r, err
}

// Delivery fetches one delivery with its payload: GET /v1/deliveries/{id}.
func (c *Client) Delivery(ctx context.Context, id int64) (api.Delivery, error) {
	var r api.Delivery
	err := c.Do(ctx, http.MethodGet, deliveryPath(id), nil, &r)
	return r, err
}

// DropDelivery deletes a pending delivery or a dead letter: DELETE /v1/deliveries/{id}.
func (c *Client) DropDelivery(ctx context.Context, id int64) (api.DropReply, error) {
	var r api.DropReply
	err := c.Do(ctx, http.MethodDelete, deliveryPath(id), nil, &r)
	return r, err
}

// RetryDelivery puts a dead letter back to pending: POST /v1/deliveries/{id}/retry.
func (c *Client) RetryDelivery(ctx context.Context, id int64) (api.Delivery, error) {
	var r api.Delivery
	err := c.Do(ctx, http.MethodPost, deliveryPath(id)+"/retry", nil, &r)
	return r, err
}

// Purge removes finished entries: POST /v1/deliveries/purge.
func (c *Client) Purge(ctx context.Context, req api.PurgeRequest) (api.PurgeReply, error) {
	var r api.PurgeReply
	err := c.Do(ctx, http.MethodPost, "/v1/deliveries/purge", req, &r)
	return r, err
}

// Recover reports what a recovery pass would do: POST /v1/recover.
func (c *Client) Recover(ctx context.Context, req api.RecoverRequest) (api.RecoveryReport, error) {
	var r api.RecoveryReport
	err := c.Do(ctx, http.MethodPost, "/v1/recover", req, &r)
	return r, err
}

// RecoverWithProgress is Recover with progress: POST /v1/recover with progress set, and
// progress called with the count of live entries read after each page, until the report.
func (c *Client) RecoverWithProgress(ctx context.Context, req api.RecoverRequest, progress func(scanned int)) (api.RecoveryReport, error) {
	req.Progress = true
	var rep *api.RecoveryReport
	err := c.stream(ctx, http.MethodPost, "/v1/recover", req, func(b []byte) error {
		var line api.RecoverProgress
		if err := json.Unmarshal(b, &line); err != nil {
			return fmt.Errorf("POST /v1/recover: a progress line: %w", err)
		}
		switch {
		case line.Error != nil:
			return line.Error
		case line.Report != nil:
			rep = line.Report
		case progress != nil:
			progress(line.Scanned)
		}
		return nil
	})
	if err == nil && rep == nil {
		err = errors.New("POST /v1/recover: the reply ended before the report")
	}
	if err != nil {
		return api.RecoveryReport{}, err
	}
	return *rep, nil
}

// Cron fetches every job and the job queue: GET /v1/cron.
func (c *Client) Cron(ctx context.Context) (api.Cron, error) {
	var r api.Cron
	err := c.Do(ctx, http.MethodGet, "/v1/cron", nil, &r)
	return r, err
}

// CronJob fetches one job: GET /v1/cron/{name}.
func (c *Client) CronJob(ctx context.Context, name string) (api.CronJobDetail, error) {
	var r api.CronJobDetail
	err := c.Do(ctx, http.MethodGet, cronPath(name), nil, &r)
	return r, err
}

// CronNext fetches a job's next count run times after from: GET /v1/cron/{name}/next.
// A count of 0 and a zero from leave them to the daemon (5, and now).
func (c *Client) CronNext(ctx context.Context, name string, count int, from time.Time) (api.CronNextReply, error) {
	v := url.Values{}
	if count > 0 {
		v.Set("count", strconv.Itoa(count))
	}
	if !from.IsZero() {
		v.Set("from", from.Format(time.RFC3339Nano))
	}
	var r api.CronNextReply
	err := c.Do(ctx, http.MethodGet, withQuery(cronPath(name)+"/next", v), nil, &r)
	return r, err
}

// CronRun runs a job now: POST /v1/cron/{name}/run.
func (c *Client) CronRun(ctx context.Context, name string, req api.CronRunRequest) (api.CronRunReply, error) {
	var r api.CronRunReply
	err := c.Do(ctx, http.MethodPost, cronPath(name)+"/run", req, &r)
	return r, err
}

// SetCronEnabled turns one job on or off: PUT /v1/cron/{name}/enabled.
func (c *Client) SetCronEnabled(ctx context.Context, name string, on bool) (api.CronEnabledReply, error) {
	var r api.CronEnabledReply
	err := c.Do(ctx, http.MethodPut, cronPath(name)+"/enabled", api.CronEnabledRequest{Enabled: &on}, &r)
	return r, err
}

// TaskQuery selects a page of GET /v1/tasks; zero values are left out.
type TaskQuery struct {
	Job    string
	State  api.TaskState
	Limit  int
	Before int64 // the NextCursor of the previous page
}

func (q TaskQuery) values() url.Values {
	return pageValues(map[string]string{"job": q.Job, "state": string(q.State)}, q.Limit, "before", q.Before)
}

// Tasks lists cron tasks, newest first, a page at a time: GET /v1/tasks.
func (c *Client) Tasks(ctx context.Context, q TaskQuery) (api.TaskList, error) {
	var r api.TaskList
	err := c.Do(ctx, http.MethodGet, withQuery("/v1/tasks", q.values()), nil, &r)
	return r, err
}

// Task fetches one task: GET /v1/tasks/{id}.
func (c *Client) Task(ctx context.Context, id int64) (api.Task, error) {
	var r api.Task
	err := c.Do(ctx, http.MethodGet, taskPath(id), nil, &r)
	return r, err
}

// CancelTask cancels a queued or running task and returns once it has ended: POST
// /v1/tasks/{id}/cancel.
func (c *Client) CancelTask(ctx context.Context, id int64) (api.TaskCancelReply, error) {
	var r api.TaskCancelReply
	err := c.Do(ctx, http.MethodPost, taskPath(id)+"/cancel", nil, &r)
	return r, err
}

// Logs fetches the gateway's last n output lines, or every kept line for n < 0: GET
// /v1/logs.
func (c *Client) Logs(ctx context.Context, n int) (api.Logs, error) {
	var r api.Logs
	err := c.Do(ctx, http.MethodGet, withQuery("/v1/logs", logsQuery(n)), nil, &r)
	return r, err
}

// FollowLogs streams the gateway's last n output lines (every kept line for n < 0), then
// each new one, calling each with every event: GET /v1/logs?follow=1. It returns as
// Stream does: nil when the daemon ends the stream, each's error, or ctx's.
func (c *Client) FollowLogs(ctx context.Context, n int, each func(api.LogEvent) error) error {
	v := logsQuery(n)
	v.Set("follow", "1")
	return c.Stream(ctx, withQuery("/v1/logs", v), func(b []byte) error {
		var e api.LogEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("a line from schedd that is not a log event: %w", err)
		}
		return each(e)
	})
}

func logsQuery(n int) url.Values {
	v := url.Values{}
	if n >= 0 {
		v.Set("n", strconv.Itoa(n))
	}
	return v
}

func deliveryPath(id int64) string { return "/v1/deliveries/" + strconv.FormatInt(id, 10) }

func taskPath(id int64) string { return "/v1/tasks/" + strconv.FormatInt(id, 10) }

func cronPath(name string) string { return "/v1/cron/" + url.PathEscape(name) }

// pageValues is the query of one page of a list: the filters that are set, the page's size
// when it is positive, and where the page starts (after, under its key) when it is positive.
func pageValues(filters map[string]string, limit int, afterKey string, after int64) url.Values {
	v := url.Values{}
	for key, value := range filters {
		if value != "" {
			v.Set(key, value)
		}
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if after > 0 {
		v.Set(afterKey, strconv.FormatInt(after, 10))
	}
	return v
}

// withQuery appends v to path, if there is any.
func withQuery(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

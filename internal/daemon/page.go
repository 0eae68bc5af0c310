package daemon

import (
	"context"
	"errors"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron"
	"github.com/schedd/schedd/internal/metrics"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store"
)

// pageViews are the read-only views the status page on metrics.listen shows, read the way
// the control API reads them: the status of GET /v1/status, the tasks of GET /v1/tasks,
// the dead letters of GET /v1/deliveries?state=dead and the lines of GET /v1/logs. The
// services are set up before the page serves its first request.
//
// The page is not the control API: internal/metrics serves it beside the metrics on
// metrics.listen, a TCP port for a browser, read-only and without the socket's owner
// check, so it is not a route of internal/server. These views stay with the daemon
// because they join its components (status, cron, deliveries, the output ring); a
// dead letter is shown as the API shows it (server.DeliveryView).
type pageViews struct{ d *Daemon }

var _ metrics.Views = pageViews{}

func (v pageViews) Status(ctx context.Context) api.Status { return v.d.Status(ctx) }

func (v pageViews) Tasks(ctx context.Context, job string, limit int) ([]api.Task, error) {
	if v.d.cron == nil {
		return nil, nil
	}
	l, err := v.d.cron.Tasks(ctx, cron.TaskFilter{Job: job, Limit: limit})
	return l.Tasks, err
}

func (v pageViews) Task(ctx context.Context, id int64) (api.Task, error) {
	if v.d.cron == nil {
		return api.Task{}, metrics.ErrNotFound
	}
	t, err := v.d.cron.Task(ctx, id)
	if errors.Is(err, cron.ErrUnknownTask) {
		return api.Task{}, metrics.ErrNotFound
	}
	return t, err
}

func (v pageViews) DeadLetters(ctx context.Context, limit int) ([]api.Delivery, error) {
	if v.d.deliveries == nil {
		return nil, nil
	}
	list, err := v.d.deliveries.List(ctx, store.Filter{State: store.StateDead, Limit: limit})
	out := make([]api.Delivery, 0, len(list))
	for _, e := range list {
		out = append(out, server.DeliveryView(e, false))
	}
	return out, err
}

func (v pageViews) Logs(n int) []api.LogLine {
	lines, _ := v.d.output.Last(n)
	return lines
}

package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedd/schedd/internal/api"
)

// statusCollector turns the daemon's status, read at each scrape, into gauges (and the
// restart coordinator's request counts into counters): what the status already knows is
// not counted a second time.
type statusCollector struct {
	status func(context.Context) api.Status
}

var (
	descUp = prometheus.NewDesc("schedd_gateway_up",
		"1 when the gateway is ready, else 0.", nil, nil)
	descState = prometheus.NewDesc("schedd_gateway_state",
		"1 for the state the gateway is in, 0 for the others.", []string{"state"}, nil)
	descRequests = prometheus.NewDesc("schedd_gateway_restart_requests_total",
		"Restart requests received, by source (signal, cli, api, config).", []string{"source"}, nil)
	descPending = prometheus.NewDesc("schedd_gateway_restart_pending",
		"1 while a restart waits (for its delay, the cooldown or the gateway to be idle).", nil, nil)
	descDepth = prometheus.NewDesc("schedd_deliveries_queue_depth",
		"Stored deliveries by state (pending, sending, dead).", []string{"state"}, nil)
	descOldest = prometheus.NewDesc("schedd_deliveries_oldest_pending_age_seconds",
		"Age of the oldest pending delivery; 0 when none is pending.", nil, nil)
	descDiskFull = prometheus.NewDesc("schedd_delivery_store_disk_full",
		"1 while the delivery store refuses enqueues for lack of disk space.", nil, nil)
	descCronTasks = prometheus.NewDesc("schedd_cron_tasks",
		"Cron tasks queued or running.", []string{"state"}, nil)
	descStoreUp = prometheus.NewDesc("schedd_delivery_store_up",
		"1 while the delivery store can be read and, for a shared store, its database answers; 0 while it cannot.", nil, nil)
	descNextPulse = prometheus.NewDesc("schedd_heartbeat_next_due_timestamp_seconds",
		"When the agent's next heartbeat pulse is due, in Unix seconds; absent while none is scheduled.", []string{"agent"}, nil)
	descCronFailures = prometheus.NewDesc("schedd_cron_job_consecutive_failures",
		"Failed runs of the cron job since its last success.", []string{"job"}, nil)
)

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descState, descRequests, descPending, descDepth, descOldest, descDiskFull, descCronTasks, descStoreUp, descNextPulse, descCronFailures} {
		ch <- d
	}
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeStatusLimit)
	defer cancel()
	st := c.status(ctx)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gw := st.Gateway
	gauge(descUp, flag(gw.State == api.GatewayReady))
	for _, s := range gatewayStates {
		gauge(descState, flag(string(gw.State) == s), s)
	}
	if r := st.Restart; r != nil {
		for _, s := range restartSources {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(r.Requests[api.RestartSource(s)]), s)
		}
		gauge(descPending, flag(r.Pending != nil))
	}
	if d := st.Deliveries; d != nil {
		for s, n := range map[string]int{string(api.DeliveryPending): d.Pending, string(api.DeliverySending): d.Sending, string(api.DeliveryDead): d.Failed} {
			gauge(descDepth, float64(n), s)
		}
		age := 0.0
		if d.OldestPendingAt != nil {
			age = seconds(time.Since(*d.OldestPendingAt))
		}
		gauge(descOldest, age)
		gauge(descDiskFull, flag(d.DiskFull))
		gauge(descStoreUp, flag(d.ReadError == nil && (d.Connected == nil || *d.Connected)))
	}
	if hb := st.Heartbeat; hb != nil {
		for _, a := range hb.Agents {
			if a.NextDueAt != nil {
				gauge(descNextPulse, float64(a.NextDueAt.UnixMilli())/1000, a.ID)
			}
		}
	}
	if cr := st.Cron; cr != nil {
		gauge(descCronTasks, float64(cr.Queued), string(api.TaskQueued))
		gauge(descCronTasks, float64(cr.Running), string(api.TaskRunning))
		for _, j := range cr.Jobs {
			gauge(descCronFailures, float64(j.ConsecutiveFailures), j.Name)
		}
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

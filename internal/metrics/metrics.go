// Package metrics is schedd's Prometheus endpoint. It keeps its own registry (never the
// global default one) with the Go and process collectors, schedd_build_info, gauges read
// from the daemon's status at scrape time, and the counters and histograms the daemon feeds
// from the feature packages' observer hooks.
//
// Label values are bounded: each label takes a fixed set of values (states, reasons,
// sources, results; anything else becomes "other") or a name from the config file (heartbeat
// agents, delivery sinks, cron jobs). No IDs, keys, payloads, error texts or secrets.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/schedd/schedd/internal/api"
)

// other is the value of a bounded label for anything outside its set.
const other = "other"

// The fixed label sets.
var (
	exitReasons    = names(api.ExitReasons)
	gatewayStates  = names(api.GatewayStates)
	restartSources = []string{string(api.SourceSignal), string(api.SourceCLI), string(api.SourceAPI), string(api.SourceConfig)}
	pulseStatuses  = []string{string(api.RunRan), string(api.RunSkipped), string(api.RunFailed)}
	// AttemptResults are the results of a delivery attempt (a send that was made).
	AttemptResults = []string{"delivered", "failed", "dead", "not_ready", "released", "unrecorded"}
	// AttemptClasses are the error classes of a delivery attempt; "none" when it succeeded.
	AttemptClasses = []string{"none", "transient", "permanent", "not_ready"}
	// DeadReasons are the reasons of a dead letter.
	DeadReasons = []string{"permanent", "max_retries", "expired", "unknown_sink"}
	// CommitErrorKinds are the kinds of a failed store commit; io is an I/O error such as a
	// failed fsync.
	CommitErrorKinds  = []string{"disk_full", "corrupt", "io"}
	recoveryOutcomes  = []string{"recovered", "failed", "interrupted", "skipped_max_retries", "expired", "deferred_backoff", "deferred_not_ready", "deferred_budget", "deferred_error", "already_gone"}
	cronEndStates     = []string{string(api.TaskSucceeded), string(api.TaskFailed), string(api.TaskTimedOut), string(api.TaskCancelled), string(api.TaskSkipped), string(api.TaskLost)}
	durationBuckets   = prometheus.ExponentialBuckets(0.1, 2, 12)   // 0.1 s .. 205 s
	waitBuckets       = prometheus.ExponentialBuckets(1, 2, 13)     // 1 s .. 68 min
	latenessBuckets   = prometheus.ExponentialBuckets(0.01, 4, 9)   // 10 ms .. 11 min
	deliveryBuckets   = prometheus.ExponentialBuckets(0.005, 4, 12) // 5 ms .. 5.8 h
	commitBuckets     = prometheus.ExponentialBuckets(0.0005, 2, 14)
	scrapeStatusLimit = 5 * time.Second
)

// names are the string values of a list of api constants.
func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// oneOf returns v when it is in set, else "other": a label never takes a value outside its set.
func oneOf(v string, set []string) string {
	if slices.Contains(set, v) {
		return v
	}
	return other
}

// Metrics holds schedd's series. A nil *Metrics is valid and records nothing: the daemon
// calls the same hooks whether the endpoint is on or off.
type Metrics struct {
	reg *prometheus.Registry

	restarts      *prometheus.CounterVec
	startDuration prometheus.Histogram
	restartDur    prometheus.Histogram
	deferral      prometheus.Histogram
	forced        prometheus.Counter

	pulses    *prometheus.CounterVec
	pulseLate *prometheus.HistogramVec

	attempts   *prometheus.CounterVec
	delivered  *prometheus.HistogramVec
	dead       *prometheus.CounterVec
	passes     prometheus.Counter
	recovered  *prometheus.CounterVec
	commitDur  prometheus.Histogram
	commitErrs *prometheus.CounterVec

	cronRuns *prometheus.CounterVec
	cronLate *prometheus.HistogramVec

	views Views // the status page's (page.go); nil: no page

	mu           sync.Mutex
	seenRestarts int       // the gateway's restart count already counted
	seenReady    time.Time // StartedAt of the start whose time to ready was observed
}

// New builds the registry. version is schedd's; status returns the daemon's status, read at
// each scrape for the gauges (it must honour ctx).
func New(version string, status func(context.Context) api.Status) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := factory{m.reg}
	m.restarts = f.counterVec("schedd_gateway_restarts_total", "Gateway starts after the first, by why the previous process ended.", "reason")
	m.startDuration = f.histogram("schedd_gateway_start_duration_seconds", "Time from spawning the gateway to it being ready.", durationBuckets)
	m.restartDur = f.histogram("schedd_gateway_restart_duration_seconds", "Time a coordinated restart took, from its begin to the gateway ready again (or the restart failing).", durationBuckets)
	m.deferral = f.histogram("schedd_gateway_restart_deferral_seconds", "Time a restart waited for the gateway to be idle.", waitBuckets)
	m.forced = f.counter("schedd_gateway_forced_restarts_total", "Restarts forced because the gateway was not idle within max_wait.")
	m.pulses = f.counterVec("schedd_heartbeat_pulses_total", "Heartbeat outcomes by agent and status (ran, skipped, failed).", "agent", "status")
	m.pulseLate = f.histogramVec("schedd_heartbeat_lateness_seconds", "How late a heartbeat pulse started after its scheduled time.", latenessBuckets, "agent")
	m.attempts = f.counterVec("schedd_delivery_attempts_total", "Delivery sends by sink, result and error class.", "sink", "result", "class")
	m.delivered = f.histogramVec("schedd_delivery_latency_seconds", "Time from enqueue to delivered.", deliveryBuckets, "sink")
	m.dead = f.counterVec("schedd_delivery_dead_letters_total", "Deliveries dead-lettered, by reason.", "reason")
	m.passes = f.counter("schedd_delivery_recovery_passes_total", "Recovery passes run over the stored deliveries at start.")
	m.recovered = f.counterVec("schedd_delivery_recovery_entries_total", "Entries a recovery pass dealt with, by outcome.", "outcome")
	m.commitDur = f.histogram("schedd_delivery_store_commit_duration_seconds", "Duration of a delivery store group commit, fsync included.", commitBuckets)
	m.commitErrs = f.counterVec("schedd_delivery_store_commit_errors_total", "Delivery store commits that failed, by kind (disk_full, corrupt, io: an I/O error such as a failed fsync).", "kind")
	m.cronRuns = f.counterVec("schedd_cron_runs_total", "Cron tasks that ended, by job and state.", "job", "state")
	m.cronLate = f.histogramVec("schedd_cron_lateness_seconds", "How late a cron task started after it was due.", latenessBuckets, "job")
	// Series with a fixed label set exist from the start, at 0.
	for _, r := range exitReasons {
		m.restarts.WithLabelValues(r)
	}
	for _, r := range DeadReasons {
		m.dead.WithLabelValues(r)
	}
	for _, k := range CommitErrorKinds {
		m.commitErrs.WithLabelValues(k)
	}
	for _, o := range recoveryOutcomes {
		m.recovered.WithLabelValues(o)
	}
	build := f.gaugeVec("schedd_build_info", "Always 1; the labels say which schedd runs.", "version", "goversion")
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&statusCollector{status: status},
	)
	return m
}

// Handler serves the registry at /metrics and, after ServePage, the status page (GET and
// HEAD only); nothing is logged per request.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	if m.views != nil {
		m.pageRoutes(mux)
	}
	return mux
}

// Serve serves Handler on ln until ctx ends, then shuts the server down.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}()
	err := srv.Serve(ln)
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// factory registers the series it makes.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/cron"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/metrics"
	"github.com/schedd/schedd/internal/store"
)

// listenMetrics binds metrics.listen, before anything is started so that a port in use
// fails the start with the key and the address, and builds the registry the other parts
// report to. With metrics off it returns nil and d.metrics stays nil (the hooks then
// record nothing).
func (d *Daemon) listenMetrics(c *config.Config) (net.Listener, error) {
	addr := c.Metrics.Listen
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen: cannot serve metrics on %s: %w", addr, err)
	}
	d.metrics = metrics.New(d.opts.Version, d.Status)
	d.metrics.ServePage(pageViews{d})
	d.metricsLn = ln
	return ln, nil
}

// setupMetrics is the component that serves /metrics and the status page on the listener
// of listenMetrics.
// The address is read once: a reload that changes it takes effect at the next start.
func (d *Daemon) setupMetrics() (*component, error) {
	if d.metricsLn == nil {
		return nil, nil
	}
	ln, started := d.metricsLn, d.config().Metrics
	return &component{
		name: "metrics",
		run: func(ctx context.Context) error {
			d.log.Info("serving metrics and the status page", zap.String("url", "http://"+ln.Addr().String()+"/metrics"),
				zap.String("page", "http://"+ln.Addr().String()+"/"))
			return d.metrics.Serve(ctx, ln)
		},
		prepare: func(next *config.Config) (func(), error) {
			return func() {
				if next.Metrics != started {
					d.log.Warn("metrics settings changed; they take effect when schedd next starts",
						zap.String("listen", started.Listen), zap.String("new_listen", next.Metrics.Listen))
				}
			}, nil
		},
	}, nil
}

func (d *Daemon) heartbeatObserver() heartbeat.Observer {
	if d.metrics == nil {
		return heartbeat.Observer{}
	}
	return heartbeat.Observer{Pulse: d.metrics.Pulse, Late: d.metrics.PulseLate}
}

func (d *Daemon) deliveryObserver() deliveries.Observer {
	if d.metrics == nil {
		return deliveries.Observer{}
	}
	return deliveries.Observer{Attempt: d.metrics.Attempt, DeadLetter: d.metrics.DeadLetter, Pass: d.metrics.RecoveryPass}
}

func (d *Daemon) cronObserver() cron.Observer {
	if d.metrics == nil {
		return cron.Observer{}
	}
	return cron.Observer{Ended: d.metrics.CronEnded, Late: d.metrics.CronLate}
}

// storeCommits is the delivery store's OnCommit (nil with metrics off).
func (d *Daemon) storeCommits() func(time.Duration, error) {
	if d.metrics == nil {
		return nil
	}
	m := d.metrics
	return func(took time.Duration, err error) { m.Commit(took, commitErrorKind(err)) }
}

// commitErrorKind is the bounded name of a failed commit's error ("" for none).
func commitErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, store.ErrDiskFull):
		return "disk_full"
	case errors.Is(err, store.ErrCorrupt):
		return "corrupt"
	}
	return "io"
}

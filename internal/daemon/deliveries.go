package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storeid"
)

// serviceRestartDelay is the pause before the delivery service is started again after it
// stopped on a store error.
const serviceRestartDelay = 5 * time.Second

// setupDeliveries builds the durable delivery component: it builds the sinks and the
// store in the state dir, and runs the delivery service (the recovery pass, then the
// runtime) beside the supervisor once the store is open.
//
// The store is opened lazily: at startup when its file exists (its entries are recovered
// then), else by the first enqueue, which creates it. Until then nothing is created on
// disk, no goroutine or timer runs for deliveries, reads answer empty and status shows the
// store as not opened.
//
// A store file that cannot be opened fails the start of schedd, before the gateway is
// started, with an error that names the file and says what to do (storeid.ErrDamaged): a
// corrupt file (ErrCorrupt), or a database that is missing, emptied or replaced where a
// store was, is not something a restart fixes, and running without the deliveries it held
// would hide them. A damaged row is no reason to stop: the store quarantines it (a dead
// letter with the reason) and goes on.
func (d *Daemon) setupDeliveries() (*component, error) {
	c := d.config()
	ds, err := d.openDeliveryStore(c)
	if err != nil {
		return nil, err
	}
	sinks, err := d.deliverySinks(c)
	if err != nil {
		ds.Close()
		return nil, err
	}
	svc, err := deliveries.New(DeliveryConfig(c.Deliveries), ds, sinks, deliveries.Deps{Log: d.log, Observe: d.deliveryObserver()})
	if err != nil {
		ds.Close()
		return nil, err
	}
	limits := server.DeliveryLimits{Path: ds.Path(), MaxBody: c.Control.MaxBody,
		Payload: c.Deliveries.MaxPayload.Bytes(), Entries: c.Deliveries.MaxEntries}
	opened := c.Deliveries // what the store was opened with
	d.deliveries = svc
	return &component{
		name: "deliveries",
		run: func(ctx context.Context) error {
			defer func() {
				svc.StoreClosing()
				if err := ds.Close(); err != nil {
					d.log.Error("close the delivery store", zap.Error(err))
				}
			}()
			select {
			case <-ds.Opened():
			case <-ctx.Done():
				return nil
			}
			for {
				err := svc.Run(ctx)
				if ctx.Err() != nil {
					return nil
				}
				// The service stops only when the store failed it at its start (no boot epoch):
				// enqueues still work; try again.
				d.log.Error("delivery service stopped; starting it again", zap.Error(err),
					zap.Duration("retry_in", serviceRestartDelay))
				t := time.NewTimer(serviceRestartDelay)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
			}
		},
		status: func(ctx context.Context, st *api.Status) {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			// A store that cannot be read still shows, with read_error (logged by svc).
			ds, _ := svc.Status(ctx)
			st.Deliveries = &ds
		},
		routes: func(srv *server.Server) { srv.AddDeliveries(svc, limits) },
		prepare: func(next *config.Config) (func(), error) {
			sinks, err := d.deliverySinks(next)
			if err != nil {
				return nil, err
			}
			apply, err := svc.PrepareReconfigure(DeliveryConfig(next.Deliveries), sinks)
			if err != nil {
				return nil, err
			}
			return func() {
				if later := append(apply(), storeChanges(opened, next.Deliveries)...); len(later) > 0 {
					d.log.Warn("delivery settings changed that apply only when schedd starts again",
						zap.Strings("settings", later))
				}
			}, nil
		},
	}, nil
}

// storeChanges names the delivery settings that differ between a and b and take effect
// only when the store is opened again.
func storeChanges(a, b config.Deliveries) []string {
	var out []string
	if a.Store.Kind() != b.Store.Kind() || a.Store.SQLite != nil && b.Store.SQLite != nil && *a.Store.SQLite != *b.Store.SQLite ||
		a.Store.Postgres != nil && b.Store.Postgres != nil && *a.Store.Postgres != *b.Store.Postgres {
		out = append(out, "deliveries.store")
	}
	if a.MaxPayload != b.MaxPayload {
		out = append(out, "deliveries.max_payload")
	}
	if a.MaxEntries != b.MaxEntries {
		out = append(out, "deliveries.max_entries")
	}
	return out
}

// deliveryStore is a store the daemon runs deliveries on: sqlite.Lazy or postgres.Store.
type deliveryStore interface {
	store.Store
	// Opened is closed once the store is open (a lazy SQLite store opens at the first enqueue).
	Opened() <-chan struct{}
	// Path names the store's file for messages; empty for Postgres (its DSN is a secret).
	Path() string
}

// openDeliveryStore returns the store that c names. A SQLite store is opened now if its
// file exists, else by the first enqueue; a relative sqlite path is relative to the state
// dir. A Postgres store connects and migrates now.
func (d *Daemon) openDeliveryStore(c *config.Config) (deliveryStore, error) {
	dc := c.Deliveries
	if pg := dc.Store.Postgres; pg != nil {
		return d.openPostgresStore(dc, pg)
	}
	path := dc.Store.SQLite.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(d.opts.StateDir, path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds, err := sqlite.OpenLazy(ctx, path, sqlite.Options{
		Synchronous: strings.ToLower(dc.Store.SQLite.Synchronous),
		MaxPayload:  int(dc.MaxPayload.Bytes()),
		MaxEntries:  dc.MaxEntries,
		Log:         d.log.Named("deliveries"),
		OnCommit:    d.storeCommits(),
	})
	switch {
	case errors.Is(err, store.ErrCorrupt):
		return nil, storeid.Refuse(fmt.Errorf("delivery store: %w", err), path, "its entries are then never sent")
	case err != nil:
		return nil, fmt.Errorf("delivery store: %w", err)
	}
	if ds.SQLite() == nil {
		d.log.Info("delivery store not opened: the first enqueue creates it", zap.String("path", path))
	}
	return ds, nil
}

// openPostgresStore connects to the fleet's database. Its errors never name the DSN.
func (d *Daemon) openPostgresStore(dc config.Deliveries, pg *config.PostgresStore) (deliveryStore, error) {
	host := pg.HostID
	if host == "" {
		host = postgres.DefaultHostID(d.opts.StateDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds, err := postgres.Open(ctx, pg.DSN, postgres.Options{
		HostID: host, HostLease: pg.Lease.D(), MaxConns: pg.MaxConns,
		MaxPayload: int(dc.MaxPayload.Bytes()), MaxEntries: dc.MaxEntries,
		Log: d.log.Named("deliveries"),
		// A database that is down does not keep the gateway unsupervised: schedd starts,
		// refuses enqueues (503) and starts deliveries once the database is reached.
		Wait: true,
	})
	if err != nil {
		return nil, fmt.Errorf("delivery store (deliveries.store.postgres): %w", err)
	}
	d.log.Info("delivery store: postgres", zap.String("host_id", host), zap.Int("schema", ds.Info().Schema))
	d.fleetDB = ds
	return ds, nil
}

// DeliveryConfig turns the deliveries section of the config file into the delivery
// service's policy: the config's values as they are (defaulted and checked by
// internal/config; a zero means the same in both).
func DeliveryConfig(dc config.Deliveries) deliveries.Config {
	rc := deliveries.Config{
		MaxRetries:         dc.MaxRetries,
		Jitter:             dc.Jitter,
		PermanentPatterns:  slices.Clone(dc.PermanentErrors),
		RetryAfterMax:      dc.MaxRetryAfter.D(),
		RecoveryBudget:     dc.RecoveryBudget.D(),
		ReplaySpacing:      dc.ReplaySpacing.D(),
		Workers:            dc.Workers,
		TTL:                dc.TTL.D(),
		DeliveredRetention: dc.DeliveredRetention.D(),
		DeadRetention:      dc.DeadRetention.D(),
	}
	for _, s := range dc.Schedule {
		rc.Schedule = append(rc.Schedule, s.D())
	}
	return rc
}

// deliverySinks builds the sinks c configures. A gateway sink is attempted only while the
// supervised gateway is ready.
func (d *Daemon) deliverySinks(c *config.Config) (map[string]deliveries.Sink, error) {
	out := map[string]deliveries.Sink{}
	for _, name := range slices.Sorted(maps.Keys(c.Deliveries.Sinks)) {
		s := c.Deliveries.Sinks[name]
		var sink deliveries.Sink
		var err error
		switch {
		case s.HTTP != nil:
			sink, err = deliveries.NewHTTPSink(deliveries.HTTPConfig{
				Method: s.HTTP.Method, URL: s.HTTP.URL, Headers: maps.Clone(s.HTTP.Headers), Timeout: s.HTTP.Timeout.D(),
			})
		case s.Exec != nil:
			sink, err = deliveries.NewExecSink(deliveries.ExecConfig{
				Command: slices.Clone(s.Exec.Command), Timeout: s.Exec.Timeout.D(),
				TransientCodes: slices.Clone(s.Exec.TransientCodes), Environ: d.opts.Environ, Run: platform.RunCommand,
			})
		case s.Gateway != nil:
			base := s.Gateway.BaseURL
			if base == "" {
				base = c.GatewayBaseURL()
			}
			sink, err = deliveries.NewGatewaySink(deliveries.HTTPConfig{
				URL: strings.TrimSuffix(base, "/") + s.Gateway.Path, Timeout: s.Gateway.Timeout.D(),
			}, d.gatewayReady)
		case s.OpenClaw != nil:
			sink, err = deliveries.NewOpenClawSink(deliveries.OpenClawConfig{
				URL: s.OpenClaw.URL, Token: s.OpenClaw.HookToken(), Timeout: s.OpenClaw.Timeout.D(),
			})
		default:
			err = errors.New("no sink kind")
		}
		if err != nil {
			return nil, fmt.Errorf("deliveries.sinks.%s: %w", name, err)
		}
		out[name] = sink
	}
	return out, nil
}

// gatewayReady is the gateway sink's readiness: the supervised gateway is ready.
func (d *Daemon) gatewayReady() bool { return d.sup.Status().State == api.GatewayReady }

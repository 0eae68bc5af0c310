// Command riverbench measures River (github.com/riverqueue/river) on PostgreSQL, the
// comparison of bench/deliveries/run.sh --postgres: the same payload size, number of
// operations and concurrency as dlbench's, through the same closed loop
// (bench/deliveries/load), with River's ordinary client (river.Client over riverpgxv5). It
// is a module of its own so that schedd's go.mod does not depend on River.
//
//	riverbench migrate -dsn D                      River's schema (rivermigrate, up)
//	riverbench enqueue -dsn D -clients C -n N      one Client.Insert per job, C concurrent
//	         [-unique]                             callers; -unique: each job carries its own
//	                                               key (UniqueOpts ByArgs on the key only),
//	                                               as each schedd entry carries its own
//	                                               idempotency key
//	riverbench drain -dsn D -n N -workers W -url U N jobs stored (InsertMany), then a client
//	                                               with W workers, each job an HTTP POST of
//	                                               its payload to U; reports the time from
//	                                               the start to the last job completed
//
// Each subcommand prints one JSON object on stdout.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/schedd/schedd/bench/deliveries/load"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: riverbench migrate|enqueue|drain [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{"migrate": migrateCmd, "enqueue": enqueueCmd, "drain": drainCmd}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "riverbench: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
}

// HookArgs is a job: a delivery of Data to a sink, under its own Key.
type HookArgs struct {
	Key  string `json:"key" river:"unique"`
	Data string `json:"data"`
}

func (HookArgs) Kind() string { return "hook" }

// pool connects to dsn with at most conns connections (River's client and its workers share
// it; schedd's store has a pool of 8 by default).
func pool(ctx context.Context, dsn string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// quiet is River's logger: warnings and errors only, on stderr.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func migrateCmd(args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ExitOnError)
	dsn := fs.String("dsn", "", "the database")
	fs.Parse(args)
	ctx := context.Background()
	p, err := pool(ctx, *dsn, 2)
	if err != nil {
		return err
	}
	defer p.Close()
	m, err := rivermigrate.New(riverpgxv5.New(p), nil)
	if err != nil {
		return err
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return err
	}
	return load.Emit(map[string]any{"bench": "river migrate", "versions": len(res.Versions)})
}

func enqueueCmd(args []string) error {
	fs := flag.NewFlagSet("enqueue", flag.ExitOnError)
	dsn := fs.String("dsn", "", "the database")
	clients := fs.Int("clients", 1, "concurrent callers of Client.Insert")
	conns := fs.Int("conns", 0, "connections in the pool (default: as many as clients, as pgxpool's default would on 4 CPUs)")
	n := fs.Int("n", 5000, "jobs in all")
	size := fs.Int("size", 256, "payload bytes")
	prefix := fs.String("prefix", "k", "key prefix (unique per run)")
	unique := fs.Bool("unique", false, "each job unique by its key (UniqueOpts{ByArgs: true}, the key the only unique field)")
	fs.IntVar(&load.DatabasePID, "db-pid", 0, "the postmaster's pid, to report the cluster's CPU time per job")
	fs.Parse(args)
	ctx := context.Background()
	p, err := pool(ctx, *dsn, max(*conns, *clients, 4))
	if err != nil {
		return err
	}
	defer p.Close()
	// An insert-only client: no queues, no workers.
	c, err := river.NewClient(riverpgxv5.New(p), &river.Config{Logger: quiet})
	if err != nil {
		return err
	}
	payload := strings.Repeat("x", *size)
	var opts *river.InsertOpts
	bench := "river insert"
	if *unique {
		opts = &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
		bench = "river insert, unique by key"
	}
	r, err := load.Run(bench, *clients, *n, func(_, i int) error {
		res, err := c.Insert(ctx, HookArgs{Key: fmt.Sprintf("%s-%d", *prefix, i), Data: payload}, opts)
		if err == nil && res.UniqueSkippedAsDuplicate {
			err = fmt.Errorf("job %d: skipped as a duplicate", i)
		}
		return err
	})
	if err != nil {
		return err
	}
	return load.Emit(r)
}

// hookWorker posts a job's payload to url with its key, as schedd's HTTP sink does (a
// client that keeps a connection per concurrent send, 10 s a request, 2xx delivered).
type hookWorker struct {
	river.WorkerDefaults[HookArgs]
	url    string
	client *http.Client
	done   atomic.Int64
	all    chan struct{}
	n      int64
}

func (w *hookWorker) Work(ctx context.Context, job *river.Job[HookArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, strings.NewReader(job.Args.Data))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", job.Args.Key)
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

func drainCmd(args []string) error {
	fs := flag.NewFlagSet("drain", flag.ExitOnError)
	dsn := fs.String("dsn", "", "the database")
	n := fs.Int("n", 50000, "jobs")
	size := fs.Int("size", 256, "payload bytes")
	workers := fs.Int("workers", 16, "River's MaxWorkers for the queue")
	conns := fs.Int("conns", 8, "connections in the pool (schedd's store: 8 by default)")
	url := fs.String("url", "", "the sink's URL")
	cooldown := fs.Duration("fetch-cooldown", 0, "River's FetchCooldown, the least time between two fetches of jobs (0: River's default, 100 ms)")
	fs.IntVar(&load.DatabasePID, "db-pid", 0, "the postmaster's pid, to report the cluster's CPU time per job")
	fs.Parse(args)
	ctx := context.Background()
	p, err := pool(ctx, *dsn, *conns)
	if err != nil {
		return err
	}
	defer p.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	w := &hookWorker{url: *url, client: &http.Client{Transport: tr}, all: make(chan struct{}), n: int64(*n)}
	ws := river.NewWorkers()
	river.AddWorker(ws, w)
	c, err := river.NewClient(riverpgxv5.New(p), &river.Config{
		Logger:        quiet,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		Workers:       ws,
		FetchCooldown: *cooldown,
	})
	if err != nil {
		return err
	}
	// The jobs, stored before the client starts working (InsertMany: COPY, by 1,000).
	payload := strings.Repeat("x", *size)
	for i := 0; i < *n; i += 1000 {
		var ps []river.InsertManyParams
		for j := i; j < min(i+1000, *n); j++ {
			ps = append(ps, river.InsertManyParams{Args: HookArgs{Key: fmt.Sprint("pre-", j), Data: payload}})
		}
		if _, err := c.InsertManyFast(ctx, ps); err != nil {
			return err
		}
	}
	events, cancelSub := c.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancelSub()
	r, err := load.Run("river drain", 1, 1, func(_, _ int) error {
		if err := c.Start(ctx); err != nil {
			return err
		}
		for done := 0; done < *n; {
			select {
			case ev := <-events:
				if ev.Kind != river.EventKindJobCompleted {
					return fmt.Errorf("job %d failed: %v", ev.Job.ID, ev.Job.Errors)
				}
				done++
			case <-time.After(time.Minute):
				return errors.New("no job completed for a minute")
			}
		}
		return nil
	})
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if serr := c.Stop(stopCtx); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	// Every job completed, as the table says.
	var completed int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&completed); err != nil {
		return err
	}
	if completed != *n {
		return fmt.Errorf("%d of %d jobs completed in the table", completed, *n)
	}
	return load.Emit(map[string]any{"bench": "river drain", "n": *n, "workers": *workers, "fetch_cooldown_ms": cmp.Or(*cooldown, river.FetchCooldownDefault).Seconds() * 1000, "seconds": r.Seconds,
		"per_s": float64(*n) / r.Seconds, "client_cpu_us": r.ClientCPUus / float64(*n),
		"database_cpu_us": r.DatabaseCPUus / float64(*n)})
}

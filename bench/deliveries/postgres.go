package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedd/schedd/bench/deliveries/load"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// openStore opens the SQLite store at path, or the Postgres store of dsn when it is set,
// with the config file's defaults, as `schedd run` would.
func openStore(path, dsn string) (store.Store, error) {
	maxPayload, maxEntries := int(config.DefaultMaxPayload.Bytes()), config.DefaultMaxDeliveryEntries
	if dsn != "" {
		return postgres.Open(context.Background(), dsn, postgres.Options{HostID: "dlbench",
			HostLease: config.DefaultPostgresLease, MaxConns: config.DefaultPostgresMaxConns,
			MaxPayload: maxPayload, MaxEntries: maxEntries})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: sqlite.SyncFull, MaxPayload: maxPayload, MaxEntries: maxEntries})
}

// storeEnqueueCmd enqueues through the Postgres store (or the SQLite one of -db) in this
// process, one entry per call, each with its own key and a payload of -size bytes: the
// store beside River's Insert, with no control API in between.
func storeEnqueueCmd(args []string) error {
	fs := flag.NewFlagSet("storeenqueue", flag.ExitOnError)
	dsn := fs.String("dsn", "", "the database of the Postgres store")
	db := fs.String("db", "", "the SQLite store's file, when no -dsn")
	clients := fs.Int("clients", 1, "concurrent callers")
	n := fs.Int("n", 5000, "entries in all")
	size := fs.Int("size", 256, "payload bytes")
	prefix := fs.String("prefix", "k", "idempotency key prefix (unique per run)")
	fs.IntVar(&load.DatabasePID, "db-pid", 0, "the postmaster's pid, to report the cluster's CPU time per entry")
	fs.Parse(args)
	ctx := context.Background()
	st, err := openStore(*db, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	payload := []byte(strings.Repeat("x", *size))
	r, err := load.Run("store enqueue in process", *clients, *n, func(_, i int) error {
		_, created, err := st.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprintf("%s-%d", *prefix, i), Payload: payload})
		if err == nil && !created {
			err = fmt.Errorf("entry %d: not created", i)
		}
		return err
	})
	if err != nil {
		return err
	}
	return load.Emit(r)
}

// pgSummaryCmd prints a run of run-postgres.sh: schedd on the Postgres store and River on
// the same cluster, figure by figure, with schedd's ratio to River's (target: above 1).
func pgSummaryCmd(args []string) error {
	type result struct {
		Bench       string         `json:"bench"`
		Who         string         `json:"who"`
		Clients     int            `json:"clients"`
		PerS        float64        `json:"per_s"`
		Latency     load.Latencies `json:"latency"`
		ClientCPU   float64        `json:"client_cpu_us"`
		ServerCPU   float64        `json:"server_cpu_us"`
		DatabaseCPU float64        `json:"database_cpu_us"`
		When        string         `json:"when"`
		Load1       float64        `json:"load1"`
		Load5       float64        `json:"load5"`
		// FetchCooldownMS is River's FetchCooldown in a drain.
		FetchCooldownMS float64 `json:"fetch_cooldown_ms"`
	}
	rs, err := readResults("pgsummary", args, func(r result) bool { return r.Bench != "" })
	if err != nil {
		return err
	}
	find := func(bench, who string, clients int) (result, bool) {
		for _, r := range rs {
			if r.Bench == bench && r.Who == who && r.Clients == clients {
				return r, true
			}
		}
		return result{}, false
	}
	w := os.Stdout
	for _, r := range rs {
		if r.Bench == "loadavg" {
			fmt.Fprintf(w, "load average at the %s: %.2f (1 min), %.2f (5 min)\n", r.When, r.Load1, r.Load5)
		}
	}
	cpu := func(r result) string {
		s := fmt.Sprintf("postgres %.0f + client %.0f", r.DatabaseCPU, r.ClientCPU)
		if r.ServerCPU > 0 {
			s = fmt.Sprintf("schedd %.0f + ", r.ServerCPU) + s
		}
		return s + " us"
	}
	fmt.Fprintf(w, "%-44s %10s %10s %8s  %s\n", "measure (same PostgreSQL cluster)", "schedd", "River", "ratio", "cpu per entry: schedd's; River's")
	for _, c := range []int{1, 16} {
		s, ok1 := find("durable enqueue via the control API", "", c)
		r, ok2 := find("river insert", "", c)
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(w, "%-44s %8.0f/s %8.0f/s %7.2fx  %s; %s (p50 %.0f us; %.0f us)\n",
			fmt.Sprintf("durable enqueue, %d client(s)", c), s.PerS, r.PerS, s.PerS/r.PerS, cpu(s), cpu(r),
			s.Latency.P50us, r.Latency.P50us)
		if u, ok := find("river insert, unique by key", "", c); ok {
			fmt.Fprintf(w, "%-44s %10s %8.0f/s %7.2fx  %s (p50 %.0f us)\n",
				fmt.Sprintf("  River with a unique key per job, %d", c), "", u.PerS, s.PerS/u.PerS, cpu(u), u.Latency.P50us)
		}
		// Beside the figure: the parts of it, each with its ratio to River's, or (an exchange
		// answered before the store) alone.
		for _, v := range []struct {
			bench, label string
			ratio        bool
		}{
			{"store enqueue in process", "the store in process (as River)", true},
			{"round trip without the store", "schedd's HTTP exchange alone", false},
			{"durable enqueue via the control API, a client on the wire", "a client on the wire (-wire)", true},
			{"round trip without the store, a client on the wire", "its HTTP exchange alone", false},
		} {
			x, ok := find(v.bench, "", c)
			if !ok {
				continue
			}
			label := fmt.Sprintf("  %s, %d", v.label, c)
			if v.ratio {
				fmt.Fprintf(w, "%-44s %8.0f/s %8.0f/s %7.2fx  %s (p50 %.0f us)\n", label, x.PerS, r.PerS, x.PerS/r.PerS, cpu(x), x.Latency.P50us)
			} else {
				fmt.Fprintf(w, "%-44s %8.0f/s %10s %8s  schedd %.0f + client %.0f us (p50 %.0f us)\n", label, x.PerS, "", "", x.ServerCPU, x.ClientCPU, x.Latency.P50us)
			}
		}
	}
	s, ok := find("deliveries to a no-op HTTP sink", "schedd", 0)
	for _, c := range []struct{ who, what string }{
		{"river", "FetchCooldown 1 ms"}, {"river-default", "River's default FetchCooldown (100 ms)"},
	} {
		if r, ok2 := find("deliveries to a no-op HTTP sink", c.who, 0); ok && ok2 {
			fmt.Fprintf(w, "%-44s %8.0f/s %8.0f/s %7.2fx  River: %s\n", "drain to a no-op HTTP sink, 16 workers", s.PerS, r.PerS, s.PerS/r.PerS, c.what)
		}
	}
	if c, ok := find("drain cpu", "schedd", 0); ok {
		fmt.Fprintf(w, "%-44s %10s %10s %8s  schedd %.0f + postgres %.0f us\n", "  schedd's drain, cpu per delivery", "", "", "", c.ServerCPU, c.DatabaseCPU)
	}
	for _, r := range rs {
		if r.Bench == "river drain" {
			fmt.Fprintf(w, "%-44s %10s %8.0f/s %8s  postgres %.0f + client %.0f us (FetchCooldown %g ms)\n", "  River, start to every job completed", "",
				r.PerS, "", r.DatabaseCPU, r.ClientCPU, r.FetchCooldownMS)
		}
	}
	return nil
}

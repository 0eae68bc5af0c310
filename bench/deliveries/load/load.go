// Package load is the closed-loop load of the delivery benchmarks: a number of clients
// share a number of operations, each client starting its next operation when its last one
// was answered. dlbench (schedd's control API) and asynqbench (asynq on Redis) both run
// their requests through it, so both are driven and timed the same way.
package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Latencies summarizes per-operation times.
type Latencies struct {
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
}

// Summarize returns the median and the 99th percentile of d (sorting d).
func Summarize(d []time.Duration) Latencies {
	if len(d) == 0 {
		return Latencies{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(d))), len(d)-1)
		return float64(d[i].Nanoseconds()) / 1e3
	}
	return Latencies{P50us: at(0.50), P99us: at(0.99)}
}

// Result is one measured run, as the benchmarks print it.
type Result struct {
	Bench   string `json:"bench"`
	Clients int    `json:"clients"`
	// N is the number of operations (requests); Entries, when a request carries several,
	// the number of entries they carried.
	N       int     `json:"n"`
	Entries int     `json:"entries,omitempty"`
	Seconds float64 `json:"seconds"`
	// PerS is entries (or operations) per second.
	PerS    float64   `json:"per_s"`
	Latency Latencies `json:"latency"`
	// CPU time per operation (user and system, from /proc) of this client process and of
	// the server (ServerPID), when they could be read.
	ClientCPUus float64 `json:"client_cpu_us,omitempty"`
	ServerCPUus float64 `json:"server_cpu_us,omitempty"`
	// DatabaseCPUus is the CPU time per operation of the PostgreSQL cluster (DatabasePID),
	// when there is one.
	DatabaseCPUus float64 `json:"database_cpu_us,omitempty"`
}

// ServerPID is the process whose CPU time Run reports as the server's (0: none).
var ServerPID int

// DatabasePID is a PostgreSQL postmaster whose CPU time, with its children's (its backends,
// WAL writer and checkpointer, live or exited), Run reports as the database's (0: none).
var DatabasePID int

// procCPU is the CPU time (user and system) pid has used, from /proc/PID/stat; pid 0 is
// this process.
func procCPU(pid int) (time.Duration, error) {
	st, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return st.cpu, nil
}

// stat is what procStat reads of /proc/PID/stat.
type stat struct {
	ppid     int
	cpu      time.Duration // utime + stime
	children time.Duration // cutime + cstime: of the children it waited for
}

func procStat(pid int) (stat, error) {
	name := "self"
	if pid > 0 {
		name = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The fields after the command (which may hold spaces) in parentheses: ppid is the 4th
	// field, utime, stime, cutime and cstime the 14th to 17th, in clock ticks (100 a second
	// on Linux).
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc/%s/stat: %d fields", name, len(f))
	}
	var v [5]int64
	for i, k := range []int{1, 11, 12, 13, 14} {
		if v[i], err = strconv.ParseInt(string(f[k]), 10, 64); err != nil {
			return stat{}, fmt.Errorf("/proc/%s/stat: field %d: %q", name, k+3, f[k])
		}
	}
	tick := 10 * time.Millisecond
	return stat{ppid: int(v[0]), cpu: time.Duration(v[1]+v[2]) * tick, children: time.Duration(v[3]+v[4]) * tick}, nil
}

// treeCPU is the CPU time of pid, of its live children and of the children it reaped: a
// PostgreSQL cluster's, whose backends are the postmaster's children.
func treeCPU(pid int) (time.Duration, error) {
	root, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	total := root.cpu + root.children
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, err := procStat(child); err == nil && st.ppid == pid {
			total += st.cpu
		}
	}
	return total, nil
}

// cpuMeter measures the CPU time of this process and of the server over a run.
type cpuMeter struct {
	self, server, db          time.Duration
	selfErr, serverErr, dbErr error
}

func startCPU() cpuMeter {
	var m cpuMeter
	m.self, m.selfErr = procCPU(0)
	m.server, m.serverErr = procCPU(ServerPID)
	if DatabasePID > 0 {
		m.db, m.dbErr = treeCPU(DatabasePID)
	}
	return m
}

// per returns the CPU time each used since m, in µs per operation (0 if unknown).
func (m cpuMeter) per(n int) (client, server, db float64) {
	if t, err := procCPU(0); err == nil && m.selfErr == nil {
		client = float64((t - m.self).Microseconds()) / float64(n)
	}
	if t, err := procCPU(ServerPID); ServerPID > 0 && err == nil && m.serverErr == nil {
		server = float64((t - m.server).Microseconds()) / float64(n)
	}
	if t, err := treeCPU(DatabasePID); DatabasePID > 0 && err == nil && m.dbErr == nil {
		db = float64((t - m.db).Microseconds()) / float64(n)
	}
	return client, server, db
}

// Run runs n operations from clients concurrent clients; op(client, i) performs the i-th
// operation (0 <= i < n) for a client. It stops at the first error and returns it.
func Run(bench string, clients, n int, op func(client, i int) error) (Result, error) {
	var next atomic.Int64
	var failed atomic.Bool
	lats := make([][]time.Duration, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	cpu := startCPU()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				if err := op(c, i); err != nil {
					failed.Store(true)
					errs <- err
					return
				}
				lats[c] = append(lats[c], time.Since(t))
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	client, server, db := cpu.per(n)
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	return Result{Bench: bench, Clients: clients, N: n, Seconds: el.Seconds(), PerS: float64(n) / el.Seconds(),
		Latency: Summarize(slices.Concat(lats...)), ClientCPUus: client, ServerCPUus: server, DatabaseCPUus: db}, nil
}

// Emit prints v as one JSON line on stdout.
func Emit(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

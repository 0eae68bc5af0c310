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
}

// ServerPID is the process whose CPU time Run reports as the server's (0: none).
var ServerPID int

// procCPU is the CPU time (user and system) pid has used, from /proc/PID/stat; pid 0 is
// this process.
func procCPU(pid int) (time.Duration, error) {
	name := "self"
	if pid > 0 {
		name = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command (which may hold spaces) in parentheses; utime and
	// stime are the 14th and 15th fields, in clock ticks (100 a second on Linux).
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: %d fields", name, len(f))
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%s/stat: utime %q, stime %q", name, f[11], f[12])
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// cpuMeter measures the CPU time of this process and of the server over a run.
type cpuMeter struct {
	self, server       time.Duration
	selfErr, serverErr error
}

func startCPU() cpuMeter {
	var m cpuMeter
	m.self, m.selfErr = procCPU(0)
	m.server, m.serverErr = procCPU(ServerPID)
	return m
}

// per returns the CPU time each used since m, in µs per operation (0 if unknown).
func (m cpuMeter) per(n int) (client, server float64) {
	if t, err := procCPU(0); err == nil && m.selfErr == nil {
		client = float64((t - m.self).Microseconds()) / float64(n)
	}
	if t, err := procCPU(ServerPID); ServerPID > 0 && err == nil && m.serverErr == nil {
		server = float64((t - m.server).Microseconds()) / float64(n)
	}
	return client, server
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
	client, server := cpu.per(n)
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	return Result{Bench: bench, Clients: clients, N: n, Seconds: el.Seconds(), PerS: float64(n) / el.Seconds(),
		Latency: Summarize(slices.Concat(lats...)), ClientCPUus: client, ServerCPUus: server}, nil
}

// Emit prints v as one JSON line on stdout.
func Emit(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

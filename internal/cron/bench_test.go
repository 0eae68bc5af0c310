//go:build unix

package cron

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchJobs is how many jobs the benchmark runs.
const benchJobs = 10_000

// latencyAction records how late each run started after its due instant.
type latencyAction struct {
	late []time.Duration
	n    atomic.Int64
}

func (*latencyAction) Kind() string      { return "noop" }
func (*latencyAction) Check(*Deps) error { return nil }
func (a *latencyAction) Run(_ context.Context, _ *Deps, r RunInfo) (Result, error) {
	late := time.Since(r.Due)
	if i := a.n.Add(1) - 1; i < int64(len(a.late)) {
		a.late[i] = late
	}
	return Result{}, nil
}

// BenchmarkTenThousandJobs runs 10,000 jobs due every minute (SCHEDD_CRON_BENCH_PERIOD
// overrides the period) with a no-op action, each b.N one period, through the whole service
// and its SQLite store (WAL, synchronous=FULL) in a temp dir. It reports the lateness of the
// runs' starts after their due instants, the process's CPU while no run is due, and the Go
// heap and RSS per job.
//
//	burst:     every job due at the same instant, the worst case for lateness.
//	staggered: the jobs' offsets spread evenly over the period, as jitter does.
func BenchmarkTenThousandJobs(b *testing.B) {
	period := time.Minute
	if v := os.Getenv("SCHEDD_CRON_BENCH_PERIOD"); v != "" {
		var err error
		if period, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, staggered := range []bool{false, true} {
		name := "burst"
		if staggered {
			name = "staggered"
		}
		b.Run(name, func(b *testing.B) { benchJobsRun(b, period, staggered) })
	}
}

func benchJobsRun(b *testing.B, period time.Duration, staggered bool) {
	a := &latencyAction{late: make([]time.Duration, benchJobs*b.N)}
	origin := time.Now().Add(5 * time.Second).Truncate(time.Second)
	jobs := make([]Job, benchJobs)
	offs := make(map[string]time.Duration, benchJobs)
	for i := range jobs {
		jobs[i] = Job{Name: "job" + strconv.Itoa(i), Schedule: every{period: period, origin: origin}, Action: a}
		if staggered {
			offs[jobs[i].Name] = time.Duration(i) * (period / benchJobs)
			jobs[i].Jitter = period
		}
	}
	runtime.GC()
	heap0, rss0 := heapAlloc(), rss()
	svc, err := New(configured(Config{Jobs: jobs, OpenStore: sqliteAt(b.TempDir()), QueueSize: benchJobs, offset: offsets(offs)}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	b.ResetTimer()
	var idleCPU, idleWall time.Duration
	for round := range b.N {
		due := origin.Add(time.Duration(round) * period)
		if staggered {
			time.Sleep(time.Until(due.Add(period)))
			continue
		}
		for a.n.Load() < int64(benchJobs*(round+1)) {
			time.Sleep(10 * time.Millisecond)
		}
		// Between runs: from 2 s after the burst was done until 1 s before the next.
		time.Sleep(2 * time.Second)
		c0, w0 := cpuTime(), time.Now()
		time.Sleep(time.Until(due.Add(period - time.Second)))
		idleCPU, idleWall = idleCPU+cpuTime()-c0, idleWall+time.Since(w0)
	}
	b.StopTimer()
	for a.n.Load() < int64(benchJobs*b.N) {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	heap1, rss1 := heapAlloc(), rss()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	late := slices.Clone(a.late)
	slices.Sort(late)
	q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-late-ms")
	b.ReportMetric(q(0.99), "p99-late-ms")
	b.ReportMetric(q(1), "max-late-ms")
	if idleWall > 0 {
		b.ReportMetric(100*float64(idleCPU)/float64(idleWall), "idle-cpu-%")
	}
	b.ReportMetric(float64(heap1-heap0)/benchJobs, "heap-B/job")
	b.ReportMetric(float64(rss1-rss0)/benchJobs, "rss-B/job")
	if st := svc.Status(); st.QueueFull != 0 {
		b.Errorf("queue_full %d", st.QueueFull)
	}
}

func heapAlloc() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// rss is the resident set size in bytes (Linux; 0 elsewhere).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprint("getrusage: ", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTickBurst measures the pass alone that queues 10,000 jobs "* * * * *" due at the
// same instant (no jitter): each b.N is one slot, the clock read as in the daemon (the real
// clock, moved to just after the slot), the pass's tasks reserved before it as the loop does.
// What the pass queued is committed and ended outside the timer, so every slot finds the jobs
// idle.
func BenchmarkTickBurst(b *testing.B) {
	p := newBurstPasses(b, benchJobs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		p.before(i)
		b.StartTimer()
		p.svc.tick()
		b.StopTimer()
		p.after()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchJobs), "ns/job")
}

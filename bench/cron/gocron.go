package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/schedd/schedd/internal/cron/schedule"
)

// gocronMode runs the jobs of configMode in this process with go-co-op/gocron v2 and its
// default options (no limit on concurrent runs unless -limit, no singleton mode, no distributed locker:
// nothing is written anywhere), until SIGTERM. Every run makes the same request as
// schedd's http action, through a client like schedd's (net/http's default transport, no
// redirects), and appends "job slot_ns due_ns fired_ns start_ns end_ns ok" to out (fired is the start: gocron
// calls the task as it fires). On SIGTERM it
// writes the Go heap after a forced GC ("heap_alloc_b N heap_sys_b N") to mem.
//
// gocron has no stagger of its own (its random durations change at every run), so with
// -jitter a job is a one-minute DurationJob starting at the first minute plus the job's
// offset from schedule.Offset: the instants schedd runs the job at with that jitter.
func gocronMode(args []string) error {
	fs := flag.NewFlagSet("gocron", flag.ExitOnError)
	n := fs.Int("jobs", 10000, "jobs")
	jitter := fs.Duration("jitter", 0, "each job's jitter (0: all due at the same instant)")
	url := fs.String("url", "", "the target's URL")
	out := fs.String("out", "", "run record file")
	mem := fs.String("mem", "", "heap figures file, written at SIGTERM")
	limit := fs.String("limit", "", "at most this many runs at once (gocron.WithLimitConcurrentJobs, waiting); empty: no limit")
	_ = fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	bw := bufio.NewWriterSize(f, 1<<20) // the same in the 0-job baseline
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	run := func(job string, off time.Duration) {
		start := time.Now()
		slot := start.Add(-off).Truncate(time.Minute)
		req, err := http.NewRequest(http.MethodPost, *url, bytes.NewReader([]byte(body)))
		ok := 0
		if err == nil {
			req.Header.Set("Idempotency-Key", "cron:"+runKey(job, slot))
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					ok = 1
				}
			}
		}
		end := time.Now()
		mu.Lock()
		fmt.Fprintf(bw, "%s %d %d %d %d %d %d\n", job, slot.UnixNano(), slot.Add(off).UnixNano(), start.UnixNano(), start.UnixNano(), end.UnixNano(), ok)
		mu.Unlock()
	}
	var sopts []gocron.SchedulerOption
	if *limit != "" {
		n, err := strconv.Atoi(*limit)
		if err != nil || n < 1 {
			return fmt.Errorf("gocron: -limit %q is not a count", *limit)
		}
		sopts = append(sopts, gocron.WithLimitConcurrentJobs(uint(n), gocron.LimitModeWait))
	}
	s, err := gocron.NewScheduler(sopts...)
	if err != nil {
		return err
	}
	first := time.Now().Truncate(time.Minute).Add(time.Minute)
	for i := range *n {
		name := jobName(i)
		off := schedule.Offset(name, *jitter)
		def := gocron.CronJob("* * * * *", false)
		opts := []gocron.JobOption{gocron.WithName(name)}
		if *jitter > 0 {
			def = gocron.DurationJob(time.Minute)
			opts = append(opts, gocron.WithStartAt(gocron.WithStartDateTime(first.Add(off))))
		}
		if _, err := s.NewJob(def, gocron.NewTask(run, name, off), opts...); err != nil {
			return fmt.Errorf("job %s: %w", name, err)
		}
	}
	s.Start()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if err := os.WriteFile(*mem, fmt.Appendf(nil, "heap_alloc_b %d\nheap_sys_b %d\n", ms.HeapAlloc, ms.HeapSys), 0o600); err != nil {
		return err
	}
	if err := s.Shutdown(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return bw.Flush()
}

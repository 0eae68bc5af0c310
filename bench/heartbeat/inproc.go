package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
)

// inprocMode runs the heartbeat service in this process with N agents whose exec target
// is a no-op function, with the daemon's JSON logging and a real state file. It reports
// the process's CPU over the measured window, the Go heap per agent and the lateness of
// pulses (when the target was called, against the slot).
func inprocMode(args []string) error {
	fs, l := loadFlags("inproc", 35*time.Second) // one interval: every agent has pulsed once
	dir := fs.String("dir", "", "state and log directory (default: a temp dir)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the measured window here")
	levelName := fs.String("log-level", "info", "log level (info: a line per pulse, as the daemon logs)")
	_ = fs.Parse(args)
	level, err := zapcore.ParseLevel(*levelName)
	if err != nil {
		return err
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "hbbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	logf, err := os.Create(filepath.Join(*dir, "schedd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	// The daemon's JSON logger (cmd/schedd/run.go), writing to a file.
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(ec), zapcore.Lock(zapcore.AddSync(logf)), level)).Named("heartbeat")

	cfg := heartbeat.Config{Defaults: heartbeat.AgentConfig{Every: l.every,
		Target: &heartbeat.Target{Exec: &heartbeat.ExecTarget{Command: []string{"noop"}, Timeout: 30 * time.Second}}}}
	for i := range l.agents {
		cfg.Agents = append(cfg.Agents, heartbeat.AgentConfig{ID: fmt.Sprintf("a%05d", i)})
	}
	if l.agents == 0 {
		no := false
		cfg.Defaults.Enabled = &no
	}
	heap0 := heapInUse()
	rec := &lateness{}
	svc, err := heartbeat.New(cfg, heartbeat.Deps{
		Logger: log,
		Store:  heartbeat.NewFileStore(*dir, log),
		Run:    rec.run,
		// The pulse's variables alone: the daemon's environment is not what is measured.
		Environ: []string{},
	})
	if err != nil {
		return err
	}
	cfg = heartbeat.Config{} // the service keeps what it needs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()

	time.Sleep(l.warmup)
	heap1 := heapInUse()
	rec.reset()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	cpu0, t0 := cpuTime(), time.Now()
	time.Sleep(l.measure)
	cpu1, t1 := cpuTime(), time.Now()
	if *profile != "" {
		pprof.StopCPUProfile()
	}
	late := rec.take()
	rss := rssKB()
	cancel()
	if err := <-done; err != nil {
		return err
	}
	secs := t1.Sub(t0).Seconds()
	perAgent := "-"
	if l.agents > 0 {
		perAgent = fmt.Sprintf("%.0f", float64(int64(heap1)-int64(heap0))/float64(l.agents))
	}
	fmt.Printf("agents=%d every=%s pulses=%d pulses_per_s=%.1f cpu_pct=%.2f heap_mib=%.1f heap_per_agent_b=%s rss_mib=%.1f %s\n",
		l.agents, l.every, len(late), float64(len(late))/secs, 100*(cpu1-cpu0).Seconds()/secs,
		float64(heap1)/(1<<20), perAgent, float64(rss)/1024, summary("late", late))
	return nil
}

// heapInUse is the live Go heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rssKB reads VmRSS from /proc (Linux); 0 elsewhere.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb
		}
	}
	return 0
}

// lateness records how late each pulse reached the target, in ms.
type lateness struct {
	mu sync.Mutex
	ms []float64
}

func (l *lateness) run(_ context.Context, spec platform.RunSpec) (platform.RunResult, error) {
	now := time.Now()
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "SCHEDD_SCHEDULED_AT="); ok {
			if at, err := time.Parse(time.RFC3339Nano, v); err == nil {
				l.mu.Lock()
				l.ms = append(l.ms, float64(now.Sub(at).Nanoseconds())/1e6)
				l.mu.Unlock()
			}
		}
	}
	return platform.RunResult{Status: platform.ExitStatus{Exited: true}}, nil
}

func (l *lateness) reset() {
	l.mu.Lock()
	l.ms = l.ms[:0]
	l.mu.Unlock()
}

func (l *lateness) take() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]float64(nil), l.ms...)
}

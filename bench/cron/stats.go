package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// statsMode prints the figures of one run as "key value" lines. The runs counted are those
// of the K slots from, from+1m, ...; the CPU is taken over [from-0.5s, from+K min-0.5s],
// which holds every run of those slots, jitter or not, and "between runs" over the part of
// each minute from 1 s after its last run ended to 0.5 s before the next slot.
func statsMode(args []string) error {
	fs := flag.NewFlagSet("stats", flag.ExitOnError)
	from := fs.Int64("from", 0, "the first slot measured, Unix ns (a minute boundary)")
	minutes := fs.Int("minutes", 3, "slots measured")
	runsFile := fs.String("runs", "", "run records: job slot_ns due_ns fired_ns start_ns end_ns ok")
	arrivals := fs.String("arrivals", "", "the target's records: job slot_ns due_ns arrival_ns")
	samples := fs.String("samples", "", "the sampler's file")
	gcFile := fs.String("gctrace", "", "a file with the process's GODEBUG=gctrace=1 lines")
	_ = fs.Parse(args)
	first := time.Unix(0, *from)
	slots := map[int64]int{}
	for k := range *minutes {
		slots[first.Add(time.Duration(k)*time.Minute).UnixNano()] = k
	}
	kv := func(k string, v any) { fmt.Printf("%s %v\n", k, v) }

	var fire, start []float64
	ends := make([]int64, *minutes)
	runs, ok := 0, 0
	if err := eachRecord(*runsFile, 7, func(f []int64) {
		k, in := slots[f[0]]
		if !in {
			return
		}
		runs++
		ok += int(f[5])
		fire = append(fire, float64(f[2]-f[1])/1e6)
		if f[3] > 0 {
			start = append(start, float64(f[3]-f[1])/1e6)
		}
		ends[k] = max(ends[k], f[4])
	}); err != nil {
		return err
	}
	kv("runs", runs)
	kv("runs_ok", ok)
	quantiles(kv, "fire", fire)
	quantiles(kv, "start", start)
	var arrive []float64
	if *arrivals != "" {
		if err := eachRecord(*arrivals, 4, func(f []int64) {
			if _, in := slots[f[0]]; in {
				arrive = append(arrive, float64(f[2]-f[1])/1e6)
			}
		}); err != nil {
			return err
		}
		kv("arrivals", len(arrive))
		quantiles(kv, "arrive", arrive)
	}
	last := 0.0
	for k, e := range ends {
		if e > 0 {
			last = max(last, float64(e-first.Add(time.Duration(k)*time.Minute).UnixNano())/1e6)
		}
	}
	kv("last_end_ms", fmt.Sprintf("%.1f", last))

	ss, err := readSamples(*samples)
	if err != nil {
		return err
	}
	end := first.Add(time.Duration(*minutes)*time.Minute - 500*time.Millisecond).UnixNano()
	if a, b, ok := window(ss, first.Add(-500*time.Millisecond).UnixNano(), end); ok {
		wall := float64(b.wall - a.wall)
		kv("cpu_pct", fmt.Sprintf("%.2f", 100*float64(b.runtime-a.runtime)/wall))
		kv("cpu_ticks_pct", fmt.Sprintf("%.2f", 100*float64(b.ticks-a.ticks)*1e7/wall))
		if runs > 0 {
			kv("cpu_us_per_run", fmt.Sprintf("%.1f", float64(b.runtime-a.runtime)/1e3/float64(runs)))
		}
		kv("rss_kb", b.rss)
		kv("hwm_kb", b.hwm)
		kv("rssanon_kb", b.anon)
		kv("threads", b.threads)
	}
	var idleCPU, idleWall, idleVol int64
	for k, e := range ends {
		next := first.Add(time.Duration(k+1)*time.Minute - 500*time.Millisecond).UnixNano()
		if a, b, ok := window(ss, e+int64(time.Second), next); ok && b.wall-a.wall >= int64(5*time.Second) {
			idleCPU += b.runtime - a.runtime
			idleWall += b.wall - a.wall
			idleVol += b.vol - a.vol
		}
	}
	if idleWall > 0 {
		kv("idle_s", fmt.Sprintf("%.1f", float64(idleWall)/1e9))
		kv("idle_cpu_pct", fmt.Sprintf("%.3f", 100*float64(idleCPU)/float64(idleWall)))
		kv("idle_wakeups_per_s", fmt.Sprintf("%.2f", float64(idleVol)/(float64(idleWall)/1e9)))
	} else {
		kv("idle_s", 0) // runs all through the minute: no time between runs
	}
	if *gcFile != "" {
		live, n, err := lastLiveHeap(*gcFile)
		if err != nil {
			return err
		}
		kv("gc_cycles", n)
		kv("heap_live_mb", live)
	}
	return nil
}

// quantiles prints the min, p50, p99 and max (nearest rank) of v, in ms.
func quantiles(kv func(string, any), name string, v []float64) {
	if len(v) == 0 {
		kv(name+"_p50_ms", "-")
		return
	}
	slices.Sort(v)
	q := func(p float64) string {
		i := max(int(math.Ceil(p*float64(len(v))))-1, 0)
		return fmt.Sprintf("%.2f", v[i])
	}
	kv(name+"_min_ms", fmt.Sprintf("%.2f", v[0]))
	kv(name+"_p50_ms", q(0.50))
	kv(name+"_p99_ms", q(0.99))
	kv(name+"_max_ms", q(1))
}

// eachRecord calls f with the numeric fields after the job name of every line of path
// that has n fields.
func eachRecord(path string, n int, f func([]int64)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	v := make([]int64, n-1)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != n {
			continue
		}
		for i, s := range fields[1:] {
			v[i], _ = strconv.ParseInt(s, 10, 64)
		}
		f(v)
	}
	return sc.Err()
}

type sample struct {
	wall, ticks, runtime, rss, hwm, anon, threads, vol int64
}

func readSamples(path string) ([]sample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []sample
	for line := range strings.Lines(string(b)) {
		var s sample
		if _, err := fmt.Sscan(line, &s.wall, &s.ticks, &s.runtime, &s.rss, &s.hwm, &s.anon, &s.threads, &s.vol); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// window is the first sample at or after from and the last at or before to.
func window(ss []sample, from, to int64) (a, b sample, ok bool) {
	i := slices.IndexFunc(ss, func(s sample) bool { return s.wall >= from })
	j := -1
	for k, s := range ss {
		if s.wall <= to {
			j = k
		}
	}
	if i < 0 || j <= i {
		return a, b, false
	}
	return ss[i], ss[j], true
}

// gcLine matches the heap figures of a gctrace line: "gc 12 @3.1s 0%: ... 4->4->2 MB".
var gcLine = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// lastLiveHeap is the live heap (MB) marked by the last GC cycle in path, and the count of
// cycles.
func lastLiveHeap(path string) (string, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, err
	}
	live, n := "-", 0
	for line := range strings.Lines(string(b)) {
		if m := gcLine.FindStringSubmatch(line); m != nil {
			live, n = m[3], n+1
		}
	}
	return live, n, nil
}

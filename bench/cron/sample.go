package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sampleMode writes, once a second until the process ends or SIGTERM, a line
// "wall_ns ticks runtime_ns vmrss_kb vmhwm_kb rssanon_kb threads voluntary" of process pid:
// utime+stime from /proc/PID/stat (clock ticks, every thread, also ended ones), the sum of
// /proc/PID/task/*/schedstat run times (ns: CPU below a tick shows) and the sum of the
// threads' voluntary context switches (wake-ups), and VmRSS, VmHWM, RssAnon and Threads of
// /proc/PID/status.
func sampleMode(args []string) error {
	fs := flag.NewFlagSet("sample", flag.ExitOnError)
	pid := fs.Int("pid", 0, "the process")
	out := fs.String("out", "", "sample file")
	every := fs.Duration("every", time.Second, "interval")
	_ = fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		line, err := sampleOf(*pid)
		if err != nil {
			return nil // the process has ended
		}
		fmt.Fprintln(w, line)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func sampleOf(pid int) (string, error) {
	dir := fmt.Sprintf("/proc/%d", pid)
	now := time.Now().UnixNano()
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return "", err
	}
	// The fields after the command name, which may hold spaces: utime and stime are the
	// 14th and 15th of the line, the 12th and 13th after ") ".
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return "", fmt.Errorf("%s/stat: short", dir)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	var runtime, vol int64
	threads, _ := filepath.Glob(dir + "/task/*")
	for _, t := range threads {
		if b, err := os.ReadFile(t + "/schedstat"); err == nil {
			if v := strings.Fields(string(b)); len(v) > 0 {
				n, _ := strconv.ParseInt(v[0], 10, 64)
				runtime += n
			}
		}
		vol += statusField(t+"/status", "voluntary_ctxt_switches")
	}
	st2 := dir + "/status"
	return fmt.Sprintf("%d %d %d %d %d %d %d %d", now, ut+st, runtime, statusField(st2, "VmRSS"),
		statusField(st2, "VmHWM"), statusField(st2, "RssAnon"), statusField(st2, "Threads"), vol), nil
}

// statusField is the number of key in a /proc status file (kB for the memory fields).
func statusField(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

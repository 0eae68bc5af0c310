package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func TestCronText(t *testing.T) {
	now := time.Date(2027, 3, 14, 12, 0, 0, 0, time.UTC)
	in := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tc := range []struct{ got, want string }{
		{msDur(300_000), "5m"},
		{msDur(3_600_000), "1h"},
		{msDur(5_400_000), "1h30m"},
		{msDur(90_500), "1m30.5s"},
		{msDur(0), "0s"},
		{cronNext(api.CronJob{Enabled: true, NextRunAt: in(time.Minute)}, now), "in 1m0s (" + in(time.Minute).Local().Format(time.TimeOnly) + ")"},
		{cronNext(api.CronJob{Enabled: true, NextRunAt: in(time.Hour), RetryAt: in(30 * time.Second)}, now),
			"retry in 30s (" + in(30*time.Second).Local().Format(time.TimeOnly) + ")"},
		{cronNext(api.CronJob{Enabled: true}, now), "none (the schedule has ended)"},
		{cronNext(api.CronJob{DisabledReason: "10 failures in a row; the last: exit 3"}, now), "off: 10 failures in a row; the last: exit 3"},
		{cronLast(&api.CronLast{State: api.TaskSkipped, Reason: api.ReasonOverlap, At: now.Add(-time.Minute)}, now), "skipped (overlap) 1m0s ago"},
		{cronLast(nil, now), "never"},
		{taskDetail(api.Task{State: api.TaskFailed, ExitCode: new(3), Class: api.ClassPermanent, Error: "exec x: exit status 3"}),
			"exit 3: permanent: exec x: exit status 3"},
		{taskDetail(api.Task{State: api.TaskCancelled, Reason: api.ReasonRequested}), "requested"},
		{taskDetail(api.Task{State: api.TaskFailed, HTTPStatus: 503, Class: api.ClassTransient}), "HTTP 503: transient"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestCronStatusLines: schedd status sums up the job queue and shows the first jobs.
func TestCronStatusLines(t *testing.T) {
	now := time.Date(2027, 3, 14, 12, 0, 0, 0, time.UTC)
	st := api.Status{Cron: &api.Cron{Workers: 4, QueueSize: 1000, Running: 1, QueueFull: 2, Jobs: []api.CronJob{
		{Name: "a", Enabled: true},
		{Name: "b", DisabledReason: "disabled by request"},
	}}}
	var b strings.Builder
	printStatus(&b, st, now)
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ") // columns as words
	}
	for _, want := range []string{
		"cron 2 jobs 1 off 1 running (of 4 workers), 0 queued (of 1000), 2 skipped: queue full",
		"a next none (the schedule has ended) last never",
		"b next off: disabled by request last never",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}

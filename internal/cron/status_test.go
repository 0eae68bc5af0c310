package cron

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// Job shows a job's settings with the defaults applied, its next five runs and its history;
// Next lists run instants in UTC and in the job's zone.
func TestJobDetailAndNext(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		zone := time.FixedZone("UTC+1", 3600)
		a := &fakeAction{}
		h := start(t, dir, Config{
			Jobs:   []Job{{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Location: zone, Jitter: time.Minute, Action: a}},
			offset: offsets(map[string]time.Duration{"j": 10 * time.Second}),
		}, nil)
		sleepTo(2*time.Hour + time.Minute)
		d, err := h.svc.Job(context.Background(), "j")
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != "fake" || d.Missed != "run_once" || d.Concurrency != "forbid" || d.Retry.Max != 3 ||
			!slices.Equal(d.Retry.ScheduleMS, []int64{30_000, 60_000, 300_000, 900_000, 3_600_000}) ||
			d.DisableAfter != 10 || d.HistoryLimit != 100 || d.TimeoutMS != 600_000 || d.JitterMS != 60_000 ||
			d.Timezone != "UTC+1" || d.OffsetMS != 10_000 {
			t.Fatalf("settings %+v", d)
		}
		if len(d.Next) != 5 || !d.Next[0].Equal(t0.Add(3*time.Hour+10*time.Second)) || !d.Next[4].Equal(t0.Add(7*time.Hour+10*time.Second)) {
			t.Fatalf("next %v", d.Next)
		}
		if len(d.History) != 2 || !d.History[0].Slot.Equal(t0.Add(2*time.Hour)) {
			t.Fatalf("history %+v", d.History)
		}
		if d.Last == nil || d.Last.TaskID != d.History[0].ID || d.Last.State != api.TaskSucceeded {
			t.Fatalf("last %+v", d.Last)
		}
		n, err := h.svc.Next(context.Background(), "j", t0.Add(time.Hour+10*time.Second), 2)
		if err != nil {
			t.Fatal(err)
		}
		want := []api.CronInstant{{At: t0.Add(2*time.Hour + 10*time.Second), Local: "2000-01-01T03:00:10+01:00"},
			{At: t0.Add(3*time.Hour + 10*time.Second), Local: "2000-01-01T04:00:10+01:00"}}
		if n.Timezone != "UTC+1" || !slices.Equal(n.Runs, want) {
			t.Fatalf("next %+v", n)
		}
		b, _ := json.Marshal(h.svc.Status())
		for _, f := range []string{`"name":"j"`, `"schedule":"every 1h0m0s"`, `"timezone":"UTC+1"`, `"offset_ms":10000`,
			`"next_run_at":"2000-01-01T03:00:10Z"`, `"enabled":true`, `"consecutive_failures":0`, `"last":{"state":"succeeded"`,
			`"workers":4`, `"queue_size":1000`, `"store_state":"open"`} {
			if !strings.Contains(string(b), f) {
				t.Errorf("status lacks %s: %s", f, b)
			}
		}
	})
}

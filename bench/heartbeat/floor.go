package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/schedd/schedd/internal/heartbeat"
)

// floorMode sends the load of N agents every interval to url with nothing but a net/http
// client: a burst of POSTs of one pulse's JSON at every point of the phase grid, N per
// interval in all (N*PhaseGrid/interval a burst on average), workers at a time, with as
// many idle connections kept. No scheduling, no log, no state: what the transport alone
// costs, the floor under the daemon's figure.
func floorMode(args []string) error {
	fs, l := loadFlags("floor", 5*time.Second)
	workers := fs.Int("workers", 64, "requests in flight at most (the service's pulse workers)")
	url := fs.String("url", "", "target URL")
	_ = fs.Parse(args)
	every, err := heartbeat.ParseEvery(l.every)
	if err != nil {
		return err
	}
	grid := heartbeat.PhaseGrid
	points := int64(every / grid)
	if *url == "" || l.agents < 1 || points < 1 {
		return fmt.Errorf("floor: need -url, -agents and an interval of at least %v", grid)
	}
	body, err := json.Marshal(heartbeat.Pulse{AgentID: "a00001", Reason: "interval",
		ReasonKind: heartbeat.KindInterval, ScheduledAt: time.Now().UTC(), Attempt: 1})
	if err != nil {
		return err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = *workers
	client := &http.Client{Transport: t}
	jobs := make(chan struct{}, int64(l.agents)/points+1)
	var inflight sync.WaitGroup
	for range *workers {
		go func() {
			for range jobs {
				post(client, *url, body)
				inflight.Done()
			}
		}()
	}
	tick := time.NewTicker(grid)
	defer tick.Stop()
	start := time.Now()
	var cpu0 time.Duration
	var t0 time.Time
	var sent int64 // pulses sent so far in this interval: grid point i has those of phase i
	for i := int64(0); ; i++ {
		now := <-tick.C
		if t0.IsZero() && now.Sub(start) >= l.warmup {
			cpu0, t0 = cpuTime(), time.Now()
		}
		if !t0.IsZero() && now.Sub(t0) >= l.measure {
			break
		}
		burst := (i%points+1)*int64(l.agents)/points - sent
		sent = (sent + burst) % int64(l.agents)
		inflight.Add(int(burst))
		for range burst {
			jobs <- struct{}{}
		}
	}
	inflight.Wait()
	secs := time.Since(t0).Seconds()
	fmt.Printf("agents=%d every=%s grid=%s burst=%.1f workers=%d cpu_pct=%.2f\n",
		l.agents, every, grid, float64(l.agents)/float64(points), *workers, 100*(cpuTime()-cpu0).Seconds()/secs)
	return nil
}

func post(c *http.Client, url string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

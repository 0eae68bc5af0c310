// Command sockets-load is the load client of bench/sockets: a bounded, loopback-only HTTP
// load at a fixed total rate, which counts what a gateway restart does to the requests
// made meanwhile.
//
//	sockets-load -url http://127.0.0.1:18089/ -clients 16 -rate 200 -max-duration 120s -stop-file F
//
// Each of -clients clients sends one request every clients/rate seconds (staggered), each
// on a new connection, so every request goes through the listening socket's accept queue.
// The load runs until the stop file exists, SIGINT/SIGTERM, -max-duration or
// -max-requests, whichever comes first. A request's latency runs from the moment it was
// due (not when the client got round to it, so a stalled request delays no figure) to the
// end of the reply, for the requests that succeeded. A request is "refused" when
// connect(2) got ECONNREFUSED, and "failed" on any other error or a status other than 200
// (counted by kind: reset, eof, timeout, other). The summary is one line of key=value
// pairs on stdout, with the wall-clock start that the due times count from (to line them
// up with a supervisor's log); -latencies writes every request's due time (ns since
// start), latency (ns) and outcome.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type result struct {
	due     time.Duration // since start
	latency time.Duration
	outcome string // ok, refused, failed
}

func main() {
	target := flag.String("url", "http://127.0.0.1:18089/", "URL to request (a loopback address only)")
	clients := flag.Int("clients", 16, "concurrent clients")
	rate := flag.Float64("rate", 200, "requests per second, all clients together")
	maxDur := flag.Duration("max-duration", 120*time.Second, "stop after this long at the latest")
	maxReq := flag.Int("max-requests", 50000, "stop after this many requests at the latest")
	timeout := flag.Duration("timeout", 10*time.Second, "a request that takes longer fails")
	stopFile := flag.String("stop-file", "", "stop once this file exists")
	latencies := flag.String("latencies", "", "write every request (due_ns latency_ns outcome) to this file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("sockets-load: ")

	u, err := url.Parse(*target)
	if err != nil {
		log.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		log.Fatalf("-url %s: the host must be a loopback IP address", *target)
	}
	if *clients < 1 || *clients > 256 || *rate <= 0 || *rate > 5000 || *maxReq < 1 || *maxDur <= 0 || *maxDur > 30*time.Minute {
		log.Fatal("want 1-256 clients, a rate above 0 and at most 5000/s, -max-requests >= 1, -max-duration up to 30m")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *maxDur)
	defer cancel()
	if *stopFile != "" {
		go func() {
			for ctx.Err() == nil {
				if _, err := os.Stat(*stopFile); err == nil {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}

	client := &http.Client{
		Timeout:   *timeout,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	}
	interval := time.Duration(float64(*clients) / *rate * float64(time.Second))
	start := time.Now()
	var sent atomic.Int64
	results := make([][]result, *clients)
	var wg sync.WaitGroup
	for c := range *clients {
		wg.Go(func() {
			due := start.Add(interval * time.Duration(c) / time.Duration(*clients))
			for ; ; due = due.Add(interval) {
				if d := time.Until(due); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				if ctx.Err() != nil || sent.Add(1) > int64(*maxReq) {
					return
				}
				results[c] = append(results[c], request(client, *target, start, due))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	all := slices.Concat(results...)
	slices.SortFunc(all, func(a, b result) int { return int(a.due - b.due) })
	if *latencies != "" {
		if err := writeLatencies(*latencies, all); err != nil {
			log.Fatal(err)
		}
	}
	var ok, refused, failed int
	kinds := map[string]int{}
	lat := make([]time.Duration, 0, len(all))
	for _, r := range all {
		switch r.outcome {
		case "ok":
			ok++
			lat = append(lat, r.latency)
		case "refused":
			refused++
		default:
			failed++
			kinds[r.outcome[len("failed:"):]]++
		}
	}
	why := "-"
	if len(kinds) > 0 {
		why = ""
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			why += fmt.Sprintf("%s%s:%d", map[bool]string{true: "", false: ","}[why == ""], k, kinds[k])
		}
	}
	slices.Sort(lat)
	fmt.Printf("requests=%d ok=%d refused=%d failed=%d seconds=%.1f rate=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f failed_kinds=%s start_unix_ns=%d\n",
		len(all), ok, refused, failed, elapsed.Seconds(), float64(len(all))/elapsed.Seconds(),
		ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 99)), ms(pct(lat, 99.9)), ms(pct(lat, 100)), why, start.UnixNano())
}

// request makes one request due at due and times it from then.
func request(client *http.Client, target string, start, due time.Time) result {
	r := result{due: due.Sub(start), outcome: "ok"}
	resp, err := client.Get(target)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	r.latency = time.Since(due)
	switch {
	case err == nil:
	case errors.Is(err, syscall.ECONNREFUSED):
		r.outcome = "refused"
	case errors.Is(err, syscall.ECONNRESET):
		r.outcome = "failed:reset"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		r.outcome = "failed:eof"
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		r.outcome = "failed:timeout"
	default:
		r.outcome = "failed:other"
		otherOnce.Do(func() { log.Printf("first other failure: %v", err) })
	}
	return r
}

var otherOnce sync.Once

// pct is the p-th percentile (nearest rank) of sorted, 0 for none.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func writeLatencies(path string, all []result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, r := range all {
		fmt.Fprintf(w, "%d %d %s\n", r.due, r.latency, r.outcome)
	}
	return errors.Join(w.Flush(), f.Close())
}

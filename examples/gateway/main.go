// Command gateway is a small example gateway for trying schedd: an HTTP server that tells
// its supervisor when it is ready, what it is doing and how much work it has in flight,
// using the sd_notify protocol that schedd (and systemd) understand. It also takes
// schedd's heartbeat pulses (POST /hooks/heartbeat), durable deliveries
// (POST /hooks/deliver) and the runs of a cron job's http action (POST /hooks/cron), and
// logs each one.
//
// It serves on the sockets it inherits with systemd's protocol (schedd's gateway.sockets,
// as the demo config gives them) and otherwise listens on --listen itself.
//
//	go build -o bin/ ./examples/gateway
//	schedd run -- bin/gateway --listen 127.0.0.1:8089
//	schedd run --config examples/demo.yaml   # what `make demo` runs
//
// Environment knobs for demos:
//
//	EXAMPLE_CRASH_AFTER=3s   exit with code 1 after that long (watch the backoff)
//	EXAMPLE_SLOW_START=2s    take that long before READY=1
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8089", "address to serve HTTP on")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix(fmt.Sprintf("example-gateway[%d]: ", os.Getpid()))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if d := envDuration("EXAMPLE_SLOW_START"); d > 0 {
		log.Printf("starting slowly (%s)", d)
		time.Sleep(d)
	}
	var inflight, served atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		notify(fmt.Sprintf("X_SCHEDD_INFLIGHT=%d", n))
		defer func() { notify(fmt.Sprintf("X_SCHEDD_INFLIGHT=%d", inflight.Add(-1))) }()
		served.Add(1)
		fmt.Fprintf(w, "hello from pid %d\n", os.Getpid())
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"ok":true,"inFlight":%d}`+"\n", inflight.Load())
	})
	// schedd's own calls are not counted in flight: they would make the gateway look busy
	// to the heartbeat gate and to a restart waiting for idle.
	mux.HandleFunc("POST /hooks/heartbeat", heartbeat)
	mux.HandleFunc("POST /hooks/deliver", hook("delivery"))
	mux.HandleFunc("POST /hooks/cron", hook("cron run"))
	lns := listeners(*listen)
	ln := lns[0]
	srv := newServer(mux, lns)
	srv.serve()
	log.Printf("serving on http://%s (%d socket(s))", ln.Addr(), len(lns))
	notify("READY=1\nSTATUS=serving on " + ln.Addr().String())

	// Feed the watchdog if schedd asked for one (gateway.liveness: {notify: {}}).
	if us, _ := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64); us > 0 {
		go func() {
			t := time.NewTicker(time.Duration(us) * time.Microsecond / 2)
			defer t.Stop()
			for range t.C {
				notify("WATCHDOG=1")
			}
		}()
	}

	var crash <-chan time.Time
	if d := envDuration("EXAMPLE_CRASH_AFTER"); d > 0 {
		crash = time.After(d)
	}
	status := time.NewTicker(10 * time.Second)
	defer status.Stop()
	for {
		select {
		case <-crash:
			log.Printf("crashing on purpose (EXAMPLE_CRASH_AFTER)")
			os.Exit(1)
		case <-status.C:
			notify(fmt.Sprintf("STATUS=serving on %s, %d requests so far", ln.Addr(), served.Load()))
		case <-ctx.Done():
			log.Printf("stopping")
			notify("STOPPING=1")
			srv.drain(10 * time.Second)
			return
		}
	}
}

// pulse is the part of schedd's heartbeat pulse this gateway logs.
type pulse struct {
	AgentID     string    `json:"agent_id"`
	Reason      string    `json:"reason"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Attempt     int       `json:"attempt"`
}

// heartbeat takes one pulse. A real gateway would run the agent's heartbeat turn here; the
// reply is the event schedd records: ok-token means "ran, nothing to report".
func heartbeat(w http.ResponseWriter, r *http.Request) {
	var p pulse
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&p); err != nil {
		http.Error(w, "bad pulse: "+err.Error(), http.StatusBadRequest)
		return
	}
	log.Printf("got a heartbeat pulse: agent %s, reason %s, attempt %d, slot %s",
		p.AgentID, p.Reason, p.Attempt, p.ScheduledAt.Local().Format("15:04:05.000"))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok-token","preview":"HEARTBEAT_OK"}`+"\n")
}

// hook takes one POST and logs it as what (a delivery, a cron run) with its idempotency
// key and body. schedd sends again what it cannot know was received, with the same
// Idempotency-Key (a cron run's is "cron:" and the job's slot): a real receiver acts once
// per key. A 2xx reply marks a delivery delivered and a cron run succeeded; a 5xx would
// have it retried.
func hook(what string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		log.Printf("got a %s: key %s, %d bytes: %q", what, r.Header.Get("Idempotency-Key"), len(body), body[:min(len(body), 200)])
		w.WriteHeader(http.StatusNoContent)
	}
}

// notify sends one sd_notify message to $NOTIFY_SOCKET, if there is one.
func notify(state string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	c, err := net.Dial("unixgram", path)
	if err != nil {
		log.Printf("notify: %v", err)
		return
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		log.Printf("notify: %v", err)
	}
}

func envDuration(name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		log.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

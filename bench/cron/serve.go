package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// serveMode answers every request with 204 and records "job slot_ns due_ns arrival_ns"
// per request, written to out when it gets SIGTERM or SIGINT.
func serveMode(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	addrFile := fs.String("addr-file", "", "write the listening address here")
	out := fs.String("out", "", "arrival record file")
	jitter := fs.Duration("jitter", 0, "the jobs' jitter, for their due instants")
	_ = fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	var mu sync.Mutex
	bw := bufio.NewWriterSize(f, 1<<20)
	bad := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		job, slot, err := parseKey(r.Header.Get("Idempotency-Key"))
		mu.Lock()
		if err != nil {
			bad++
		} else {
			fmt.Fprintf(bw, "%s %d %d %d\n", job, slot.UnixNano(), due(job, slot, *jitter).UnixNano(), now.UnixNano())
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if bad > 0 {
		fmt.Fprintf(os.Stderr, "serve: %d requests without a cron idempotency key\n", bad)
	}
	return bw.Flush()
}

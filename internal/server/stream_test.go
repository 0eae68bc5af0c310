//go:build unix

package server

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// A streamed reply of a long endpoint goes on past the request timeout, line by line as
// the handler sends them, and a client that goes away ends it.
func TestStreamOutlivesRequestTimeout(t *testing.T) {
	feed := make(chan int)
	ended := make(chan struct{})
	c, srv := serve(t, Options{RequestTimeout: 50 * time.Millisecond})
	srv.HandleLong("GET /v1/ticks", func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		s := NewStream(w)
		for {
			select {
			case <-r.Context().Done():
				return
			case v := <-feed:
				if s.Send(map[string]int{"n": v}) != nil {
					return
				}
			}
		}
	})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 4)
	errc := make(chan error, 1)
	go func() {
		errc <- c.Stream(ctx, "/v1/ticks", func(line []byte) error { got <- string(line); return nil })
	}()
	feed <- 1
	if l := <-got; l != `{"n":1}` {
		t.Fatalf("first line %q", l)
	}
	// Four request timeouts later the request is still alive and the next line arrives.
	time.Sleep(200 * time.Millisecond)
	select {
	case feed <- 2:
	case <-ended:
		t.Fatal("the streamed request was cancelled at the request timeout")
	}
	if l := <-got; l != `{"n":2}` {
		t.Fatalf("second line %q", l)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream after cancel: %v", err)
	}
	<-ended // the handler saw the client go
}

func TestStreamErrors(t *testing.T) {
	c, srv := serve(t, Options{})
	srv.HandleLong("GET /v1/bad", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "n: want a number")
	})
	defer c.Close()
	none := func([]byte) error { t.Error("a line from an error reply"); return nil }
	err := c.Stream(context.Background(), "/v1/bad", none)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != 400 || ae.Message != "n: want a number" {
		t.Fatalf("error reply: %v", err)
	}
	gone := client.New(filepath.Join(t.TempDir(), "none.sock"))
	if err := gone.Stream(context.Background(), "/v1/logs", none); !errors.Is(err, client.ErrNoDaemon) {
		t.Fatalf("no daemon: %v", err)
	}
}

//go:build unix

package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/server"
)

// hit is one request the route table's server saw.
type hit struct {
	Route      string // "METHOD /path/{param}" of server.Routes; "" for a request no route took
	Method     string
	Path       string // as sent, escaped
	Query      string
	Body       string
	PathValues map[string]string
}

// routeServer serves every route of server.Routes on a unix socket, recording each request
// and answering it with a zero value of the route's reply; a request no route takes is
// recorded too and answered 404.
type routeServer struct {
	mu   sync.Mutex
	hits []hit
}

func (s *routeServer) record(h hit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits = append(s.hits, h)
}

// take returns the hits since the last take.
func (s *routeServer) take() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hits
	s.hits = nil
	return h
}

func serveRoutes(t *testing.T) (*Client, *routeServer) {
	t.Helper()
	rs := &routeServer{}
	mux := http.NewServeMux()
	for _, rt := range server.Routes {
		pattern := rt.Method + " " + rt.Path
		var params []string
		for p := range strings.SplitSeq(rt.Path, "/") {
			if name, ok := strings.CutPrefix(p, "{"); ok {
				params = append(params, strings.TrimSuffix(name, "}"))
			}
		}
		status := 0
		for code := range rt.Replies {
			if status == 0 || code < status {
				status = code
			}
		}
		reply, err := json.Marshal(rt.Replies[status])
		if err != nil {
			t.Fatal(err)
		}
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			h := hit{Route: r.Pattern, Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
				Body: string(body), PathValues: map[string]string{}}
			for _, p := range params {
				h.PathValues[p] = r.PathValue(p)
			}
			rs.record(h)
			if rt.Stream != nil && r.URL.Query().Get("follow") == "1" {
				s := server.NewStream(w)
				s.Send(api.LogEvent{Line: &api.LogLine{Seq: 1, Text: "one"}})
				s.Send(api.LogEvent{Missed: 3})
				return
			}
			if rt.Stream != nil && strings.Contains(string(body), `"progress":true`) {
				s := server.NewStream(w)
				s.Send(api.RecoverProgress{Scanned: 10000})
				s.Send(api.RecoverProgress{Scanned: 10000, Report: &api.RecoveryReport{}})
				return
			}
			if rt.Alt != nil && strings.HasPrefix(string(body), "[") {
				server.WriteJSON(w, http.StatusOK, api.BatchReply{}) // the array form's reply
				return
			}
			server.WriteJSON(w, status, json.RawMessage(reply))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rs.record(hit{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: string(body)})
		http.NotFound(w, r)
	})
	path := socketPath(t)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := New(path)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return c, rs
}

// routeCalls calls each method of Client that speaks to a route once, by name.
var routeCalls = map[string]func(context.Context, *Client) error{
	"Status":    func(ctx context.Context, c *Client) error { _, err := c.Status(ctx); return err },
	"StatusRaw": func(ctx context.Context, c *Client) error { _, err := c.StatusRaw(ctx); return err },
	"Restart": func(ctx context.Context, c *Client) error {
		_, err := c.Restart(ctx, api.RestartRequest{Reason: "test"})
		return err
	},
	"Stop": func(ctx context.Context, c *Client) error { _, err := c.Stop(ctx); return err },
	"HeartbeatWake": func(ctx context.Context, c *Client) error {
		_, err := c.HeartbeatWake(ctx, api.HeartbeatWakeRequest{Agent: "ops"})
		return err
	},
	"SetHeartbeatEnabled": func(ctx context.Context, c *Client) error {
		_, err := c.SetHeartbeatEnabled(ctx, true)
		return err
	},
	"Enqueue": func(ctx context.Context, c *Client) error {
		_, err := c.Enqueue(ctx, api.DeliveryRequest{Sink: "hook", Key: "k1"})
		return err
	},
	"EnqueueBatch": func(ctx context.Context, c *Client) error {
		_, err := c.EnqueueBatch(ctx, []api.DeliveryRequest{{Sink: "hook", Key: "a"}, {Sink: "hook", Key: "b"}})
		return err
	},
	"Deliveries": func(ctx context.Context, c *Client) error {
		_, err := c.Deliveries(ctx, DeliveryQuery{State: api.DeliveryDead, Sink: "web hook", Limit: 7, Cursor: 9})
		return err
	},
	"Delivery":      func(ctx context.Context, c *Client) error { _, err := c.Delivery(ctx, 42); return err },
	"DropDelivery":  func(ctx context.Context, c *Client) error { _, err := c.DropDelivery(ctx, 42); return err },
	"RetryDelivery": func(ctx context.Context, c *Client) error { _, err := c.RetryDelivery(ctx, 42); return err },
	"Purge": func(ctx context.Context, c *Client) error {
		_, err := c.Purge(ctx, api.PurgeRequest{State: api.DeliveryDead, OlderThan: "1h", Limit: 10})
		return err
	},
	"Recover": func(ctx context.Context, c *Client) error {
		_, err := c.Recover(ctx, api.RecoverRequest{DryRun: true})
		return err
	},
	"RecoverWithProgress": func(ctx context.Context, c *Client) error {
		_, err := c.RecoverWithProgress(ctx, api.RecoverRequest{DryRun: true}, nil)
		return err
	},
	"Cron":    func(ctx context.Context, c *Client) error { _, err := c.Cron(ctx); return err },
	"CronJob": func(ctx context.Context, c *Client) error { _, err := c.CronJob(ctx, "night/ly job"); return err },
	"CronNext": func(ctx context.Context, c *Client) error {
		from := time.Date(2027, 3, 14, 0, 0, 0, 0, time.FixedZone("", -5*3600))
		_, err := c.CronNext(ctx, "nightly", 2, from)
		return err
	},
	"CronRun": func(ctx context.Context, c *Client) error {
		_, err := c.CronRun(ctx, "nightly", api.CronRunRequest{Wait: true})
		return err
	},
	"SetCronEnabled": func(ctx context.Context, c *Client) error {
		_, err := c.SetCronEnabled(ctx, "a/b c", false)
		return err
	},
	"Tasks": func(ctx context.Context, c *Client) error {
		_, err := c.Tasks(ctx, TaskQuery{Job: "nightly", State: api.TaskFailed, Limit: 3, Before: 500})
		return err
	},
	"Task":       func(ctx context.Context, c *Client) error { _, err := c.Task(ctx, 7); return err },
	"CancelTask": func(ctx context.Context, c *Client) error { _, err := c.CancelTask(ctx, 7); return err },
	"Logs":       func(ctx context.Context, c *Client) error { _, err := c.Logs(ctx, 20); return err },
	"FollowLogs": func(ctx context.Context, c *Client) error {
		return c.FollowLogs(ctx, 0, func(api.LogEvent) error { return nil })
	},
}

// notRoutes are the methods of Client that are not one route: the transport and closing.
var notRoutes = []string{"Close", "Do", "Raw", "Stream"}

// TestEveryRouteHasAMethod: every route of server.Routes is reached by a method of Client,
// and every such method reaches exactly one route, so a route added without a client
// method (or a method whose path or verb no route takes) fails here.
func TestEveryRouteHasAMethod(t *testing.T) {
	c, rs := serveRoutes(t)
	ctx := t.Context()

	ct := reflect.TypeFor[*Client]()
	var methods []string
	for i := range ct.NumMethod() {
		name := ct.Method(i).Name
		if slices.Contains(notRoutes, name) {
			continue
		}
		methods = append(methods, name)
		if routeCalls[name] == nil {
			t.Errorf("Client.%s is not called by this test: add it to routeCalls", name)
		}
	}
	sort.Strings(methods)

	reached := map[string][]string{} // route -> methods
	for _, name := range methods {
		call := routeCalls[name]
		if call == nil {
			continue
		}
		err := call(ctx, c)
		hits := rs.take()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(hits) != 1 {
			t.Errorf("%s sent %d requests, want 1: %+v", name, len(hits), hits)
		}
		for _, h := range hits {
			if h.Route == "" {
				t.Errorf("%s sent %s %s, which no route of server.Routes takes", name, h.Method, h.Path)
				continue
			}
			reached[h.Route] = append(reached[h.Route], name)
		}
	}
	for _, rt := range server.Routes {
		if p := rt.Method + " " + rt.Path; len(reached[p]) == 0 {
			t.Errorf("no method of Client reaches %s: add one (internal/client/routes.go)", p)
		}
	}
}

// TestRouteRequests: what a method sends, for a few of them: the query of a page, an
// escaped path parameter, a request body and a batch as a JSON array.
func TestRouteRequests(t *testing.T) {
	c, rs := serveRoutes(t)
	ctx := t.Context()
	one := func(name string) hit {
		t.Helper()
		if err := routeCalls[name](ctx, c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		hits := rs.take()
		if len(hits) != 1 {
			t.Fatalf("%s sent %d requests, want 1", name, len(hits))
		}
		return hits[0]
	}
	check := func(name, what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s %q, want %q", name, what, got, want)
		}
	}

	h := one("Deliveries")
	check("Deliveries", "query", h.Query, "cursor=9&limit=7&sink=web+hook&state=dead")
	check("Deliveries", "body", h.Body, "")

	h = one("Tasks")
	check("Tasks", "query", h.Query, "before=500&job=nightly&limit=3&state=failed")

	h = one("CronNext")
	check("CronNext", "query", h.Query, "count=2&from=2027-03-14T00%3A00%3A00-05%3A00")

	h = one("SetCronEnabled")
	check("SetCronEnabled", "path", h.Path, "/v1/cron/a%2Fb%20c/enabled")
	check("SetCronEnabled", "name", h.PathValues["name"], "a/b c")
	check("SetCronEnabled", "body", h.Body, `{"enabled":false}`)

	h = one("CronJob")
	check("CronJob", "name", h.PathValues["name"], "night/ly job")

	h = one("SetHeartbeatEnabled")
	check("SetHeartbeatEnabled", "body", h.Body, `{"enabled":true}`)

	h = one("EnqueueBatch")
	var batch []api.DeliveryRequest
	if err := json.Unmarshal([]byte(h.Body), &batch); err != nil || len(batch) != 2 || batch[1].Key != "b" {
		t.Errorf("EnqueueBatch: body %s (%v), want an array of the two entries", h.Body, err)
	}

	h = one("Logs")
	check("Logs", "query", h.Query, "n=20")
	if _, err := c.Logs(ctx, -1); err != nil {
		t.Fatal(err)
	}
	check("Logs(-1)", "query", rs.take()[0].Query, "")

	var events []api.LogEvent
	if err := c.FollowLogs(ctx, 5, func(e api.LogEvent) error { events = append(events, e); return nil }); err != nil {
		t.Fatal(err)
	}
	check("FollowLogs", "query", rs.take()[0].Query, "follow=1&n=5")
	if len(events) != 2 || events[0].Line == nil || events[0].Line.Text != "one" || events[1].Missed != 3 {
		t.Errorf("FollowLogs: events %+v, want the line and then 3 missed", events)
	}

	h = one("Delivery")
	check("Delivery", "path", h.Path, "/v1/deliveries/42")
	check("Delivery", "id", h.PathValues["id"], "42")
}

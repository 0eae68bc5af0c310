package cron

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/outbound"
)

// HeartbeatWake asks the heartbeat dispatcher for a wake of an agent (coalesced like any
// wake). It succeeds once the wake is requested.
type HeartbeatWake struct {
	Agent  string // "" wakes every agent
	Reason string // "" is "cron:<job>"
}

// Kind is "heartbeat_wake".
func (*HeartbeatWake) Kind() string { return "heartbeat_wake" }

// Check needs Deps.Wake.
func (*HeartbeatWake) Check(d *Deps) error {
	if d.Wake == nil {
		return errors.New("no heartbeat dispatcher to wake")
	}
	return nil
}

// Run requests the wake.
func (a *HeartbeatWake) Run(ctx context.Context, d *Deps, r RunInfo) (Result, error) {
	reason := a.Reason
	if reason == "" {
		reason = "cron:" + r.Job
	}
	if err := d.Wake(ctx, a.Agent, reason); err != nil {
		return Result{}, fmt.Errorf("heartbeat wake: %w", err)
	}
	return Result{Output: []byte("wake requested: " + reason)}, nil
}

// Deliver stores a durable delivery for a sink. It succeeds once the delivery is stored; the
// delivery service sends it. The idempotency key is the run's, so a retried run stores it
// once.
type Deliver struct {
	Sink string
	Data []byte
}

// Kind is "deliver".
func (*Deliver) Kind() string { return "deliver" }

// Check needs a sink and Deps.Deliver.
func (a *Deliver) Check(d *Deps) error {
	if a.Sink == "" {
		return errors.New("no sink")
	}
	if d.Deliver == nil {
		return errors.New("no delivery service")
	}
	return nil
}

// Run stores the delivery.
func (a *Deliver) Run(ctx context.Context, d *Deps, r RunInfo) (Result, error) {
	id, err := d.Deliver(ctx, DeliverRequest{Sink: a.Sink, Key: "cron:" + r.RunKey, Data: a.Data})
	if err != nil {
		return Result{}, fmt.Errorf("deliver to %s: %w", a.Sink, err)
	}
	return Result{Output: []byte("delivery " + strconv.FormatInt(id, 10) + " stored")}, nil
}

// HTTP makes one request. 2xx succeeds; 408, 425, 429, 5xx and network errors are
// transient; any other status (redirects included: they are not followed) is permanent.
// Header values are secrets: no log, status or task shows them.
type HTTP struct {
	URL string
	// Method defaults to POST with a body, GET without one.
	Method  string
	Headers map[string]string
	Body    []byte
	Timeout time.Duration // 0: the job's
}

// IdempotencyHeader carries the run key on http actions, the same on every attempt.
const IdempotencyHeader = "Idempotency-Key"

// Kind is "http".
func (*HTTP) Kind() string { return "http" }

// Check needs an absolute http(s) URL.
func (a *HTTP) Check(*Deps) error {
	u, err := url.Parse(a.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("url %q is not an absolute http(s) URL", redactURL(u))
	}
	if a.Timeout < 0 {
		return fmt.Errorf("timeout %v is negative", a.Timeout)
	}
	return nil
}

func (a *HTTP) method() string {
	switch {
	case a.Method != "":
		return strings.ToUpper(a.Method)
	case len(a.Body) > 0:
		return http.MethodPost
	}
	return http.MethodGet
}

// Run makes the request through the shared client.
func (a *HTTP) Run(ctx context.Context, d *Deps, r RunInfo) (Result, error) {
	u, _ := url.Parse(a.URL)
	where := a.method() + " " + redactURL(u)
	hdr := make(http.Header, len(a.Headers)+1)
	for k, v := range a.Headers {
		hdr.Set(k, v)
	}
	if hdr.Get(IdempotencyHeader) == "" {
		hdr.Set(IdempotencyHeader, "cron:"+r.RunKey)
	}
	resp := outbound.Exchange(ctx, d.HTTPClient, outbound.Request{Method: a.method(), URL: a.URL, Header: hdr, Body: a.Body,
		MaxBody: MaxOutput, Drain: 64 << 10})
	switch {
	case resp.Fault == outbound.FaultRequest:
		return Result{}, PermanentError(fmt.Errorf("http %s: %w", where, resp.Err))
	case !resp.Replied():
		// The client's error repeats the URL, query and all: keep only its cause.
		return Result{}, TransientError(fmt.Errorf("http %s: %w", where, outbound.WithoutURL(resp.Err)))
	}
	res := Result{HTTPStatus: resp.Code, Output: resp.Body}
	switch resp.Verdict(time.Now()).Class {
	case outbound.Success:
		return res, nil
	case outbound.Transient:
		return res, TransientError(fmt.Errorf("http %s: %s", where, resp.Status))
	}
	return res, PermanentError(fmt.Errorf("http %s: %s", where, resp.Status))
}

// redactURL shows a URL without its user info, query and fragment, where tokens hide.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User, c.RawQuery, c.Fragment, c.RawFragment, c.ForceQuery = nil, "", "", "", false
	return c.String()
}

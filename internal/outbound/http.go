package outbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Request is one HTTP exchange to make.
type Request struct {
	Method string
	URL    string
	// Header is sent as given (nil: none).
	Header http.Header
	Body   []byte
	// Timeout bounds the whole exchange, reading the reply included (0: ctx alone).
	Timeout time.Duration
	// MaxBody caps how much of the reply's body is kept (0: none of it).
	MaxBody int64
	// MaxErrorBody, when > 0, caps instead the body of a reply that is not 2xx.
	MaxErrorBody int64
	// Drain is how much more of the body is read and dropped past what is kept, so that the
	// connection can carry the next request. 0 drops nothing: a longer body closes it.
	Drain int64
}

// Fault is how an exchange or a run fell short.
type Fault uint8

// The faults.
const (
	// NoFault: a whole reply came (or the command ran to its end).
	NoFault Fault = iota
	// FaultRequest: the request could not be built (a bad URL or method); nothing was sent.
	FaultRequest
	// FaultTimeout: the deadline passed first (the call's Timeout or ctx's).
	FaultTimeout
	// FaultCancelled: ctx was cancelled first.
	FaultCancelled
	// FaultTransport: the connection failed and no reply came (of a command: the runner
	// failed for another reason than the start or the context).
	FaultTransport
	// FaultBody: the reply came but reading its body failed; Body holds what was read.
	FaultBody
	// FaultStart: the command could not be started.
	FaultStart
)

// Response is how an exchange went.
type Response struct {
	// Code is the reply's status code; 0 when no reply came.
	Code int
	// Status is the reply's status line ("404 Not Found").
	Status string
	Header http.Header
	// Body is the start of the reply's body, up to the request's cap: all that was read.
	Body []byte
	// Elapsed is how long the exchange took.
	Elapsed time.Duration
	// Fault says what went wrong, if anything, and Err is its error as the HTTP client gave
	// it (it may name the URL: see WithoutURL).
	Fault Fault
	Err   error
}

// Replied reports whether a reply came (Code is set), whatever became of its body.
func (r *Response) Replied() bool { return r.Code != 0 }

// OK reports whether the reply is a 2xx.
func (r *Response) OK() bool { return r.Code >= 200 && r.Code < 300 }

// Exchange makes one HTTP request with client and reads the start of the reply. It never
// returns before the reply's body is closed.
func Exchange(ctx context.Context, client *http.Client, req Request) (res Response) {
	start := time.Now()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	defer func() { res.Elapsed = time.Since(start) }()
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		res.Fault, res.Err = FaultRequest, err
		return res
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	resp, err := client.Do(hr)
	if err != nil {
		res.Fault, res.Err = ctxFault(ctx, FaultTransport), err
		return res
	}
	defer resp.Body.Close()
	res.Code, res.Status, res.Header = resp.StatusCode, resp.Status, resp.Header
	keep := req.MaxBody
	if req.MaxErrorBody > 0 && !res.OK() {
		keep = req.MaxErrorBody
	}
	res.Body, err = io.ReadAll(io.LimitReader(resp.Body, keep))
	if err == nil && req.Drain > 0 {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, req.Drain))
	}
	if err != nil {
		res.Fault, res.Err = ctxFault(ctx, FaultBody), err
	}
	return res
}

// ctxFault is the fault behind an error: the timeout or the cancellation when ctx has
// ended, the fault given otherwise.
func ctxFault(ctx context.Context, otherwise Fault) Fault {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return FaultTimeout
	case ctx.Err() != nil:
		return FaultCancelled
	}
	return otherwise
}

// WithoutURL drops the *url.Error layer of an HTTP client's error: it repeats the method
// and the URL, query and all, where tokens hide.
func WithoutURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// NoRedirects, as a client's CheckRedirect, follows no redirect: the reply to the first request is the
// answer. A destination that moved is a configuration problem, and following a 302 would
// turn a POST into a GET.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Client is a client that follows no redirect and keeps up to perHost idle connections
// to each host (the default transport keeps two, so concurrent senders to one endpoint
// would open a new connection for most requests). perHost <= 0 keeps the default
// transport.
func Client(perHost int) *http.Client {
	if perHost <= 0 {
		return &http.Client{CheckRedirect: NoRedirects}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = perHost
	return &http.Client{Transport: t, CheckRedirect: NoRedirects}
}

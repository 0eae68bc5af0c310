package deliveries

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/outbound"
)

// Delivery is what a sink is asked to send.
type Delivery struct {
	ID      int64
	Sink    string
	Key     string // idempotency key, the same on every attempt
	Headers map[string]string
	Payload []byte
	Attempt int // 1 for the first attempt
}

// Sink sends deliveries. Send returns nil once the destination has the delivery. An error
// is classified by Classifier: return a *SendError to choose the class.
type Sink interface {
	Send(ctx context.Context, d Delivery) error
}

// Readier is implemented by sinks that can only send at times (the gateway sink): while
// Ready is false no attempt is made and nothing is charged.
type Readier interface {
	Ready() bool
}

// IdempotencyHeader carries the entry's idempotency key on HTTP sends.
const IdempotencyHeader = "Idempotency-Key"

// HTTPConfig configures an HTTP sink.
type HTTPConfig struct {
	// Method defaults to POST.
	Method string
	URL    string
	// Headers are sent on every request; an entry's own headers override them.
	Headers map[string]string
	// Timeout bounds one attempt (default 10 s).
	Timeout time.Duration
	// Client defaults to a client that does not follow redirects.
	Client *http.Client
}

// HTTPSink posts the payload to a URL. 2xx is delivered; 408, 425, 429, 5xx and network
// errors are transient (with the Retry-After hint kept); other statuses are permanent.
// Redirects are not followed: a webhook that moved is a configuration problem, and
// following a 302 would turn the POST into a GET.
type HTTPSink struct {
	cfg    HTTPConfig
	client *http.Client
}

// NewHTTPSink checks the configuration and builds the sink.
func NewHTTPSink(cfg HTTPConfig) (*HTTPSink, error) {
	if cfg.Method == "" {
		cfg.Method = http.MethodPost
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("http sink: url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("http sink: url %q is not an absolute http(s) URL", cfg.URL)
	}
	client := cfg.Client
	if client == nil {
		// Keep a connection per concurrent send: the default transport keeps 2 per host, so
		// 16 workers sending to one endpoint would open a new connection for most sends.
		client = outbound.Client(idleConnsPerHost)
	}
	return &HTTPSink{cfg: cfg, client: client}, nil
}

// idleConnsPerHost is how many idle connections an HTTP sink keeps to its endpoint.
const idleConnsPerHost = 64

// snippetLen bounds how much of an error response body goes into the error text (where the
// permanent patterns can see it).
const snippetLen = 512

// Send makes one HTTP request.
func (s *HTTPSink) Send(ctx context.Context, d Delivery) error {
	r, err := s.exchange(ctx, d, 0)
	if err != nil {
		return err
	}
	v := r.Verdict(time.Now())
	if v.Class == outbound.Success {
		return nil
	}
	msg := "HTTP " + r.Status
	if s := outbound.OneLine(r.Body); s != "" {
		msg += ": " + s
	}
	se := &SendError{Class: Permanent, Err: errors.New(msg), Status: r.Code}
	if v.Class == outbound.Transient {
		se.Class, se.RetryAfter = Transient, v.RetryAfter
	}
	return se
}

// exchange makes the request and returns the reply with the start of its body: okKeep
// bytes of a 2xx body (the HTTP sink reads none of it), snippetLen bytes of any other (the
// rest is read and dropped, up to 64 KiB, so that the connection can be kept). An error
// is returned when no reply came.
func (s *HTTPSink) exchange(ctx context.Context, d Delivery, okKeep int64) (outbound.Response, error) {
	hdr := make(http.Header, len(s.cfg.Headers)+len(d.Headers)+1)
	for k, v := range s.cfg.Headers {
		hdr.Set(k, v)
	}
	for k, v := range d.Headers {
		hdr.Set(k, v)
	}
	hdr.Set(IdempotencyHeader, d.Key)
	r := outbound.Exchange(ctx, s.client, outbound.Request{Method: s.cfg.Method, URL: s.cfg.URL, Header: hdr,
		Body: d.Payload, Timeout: s.cfg.Timeout, MaxBody: okKeep, MaxErrorBody: snippetLen, Drain: 64 << 10})
	switch {
	case r.Fault == outbound.FaultRequest:
		return r, PermanentError(fmt.Errorf("http request: %w", r.Err))
	case !r.Replied():
		return r, TransientError(fmt.Errorf("http %s: %w", s.cfg.Method, r.Err))
	}
	return r, nil
}

// GatewaySink is an HTTP sink aimed at the supervised gateway: it is attempted only while
// ready reports true (R-DLV-02); otherwise entries are deferred without charging a retry.
type GatewaySink struct {
	http  *HTTPSink
	ready func() bool
}

// NewGatewaySink builds the gateway sink; ready is typically the supervisor's readiness.
func NewGatewaySink(cfg HTTPConfig, ready func() bool) (*GatewaySink, error) {
	if ready == nil {
		return nil, errors.New("gateway sink: no readiness function")
	}
	h, err := NewHTTPSink(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway sink: %w", err)
	}
	return &GatewaySink{http: h, ready: ready}, nil
}

// Ready reports whether the gateway can take deliveries.
func (g *GatewaySink) Ready() bool { return g.ready() }

// Send sends to the gateway, or returns a NotReady error when it is not ready.
func (g *GatewaySink) Send(ctx context.Context, d Delivery) error {
	if !g.ready() {
		return NotReadyError(fmt.Errorf("gateway: %w", ErrNotReady))
	}
	return g.http.Send(ctx, d)
}

// ExecExitTransient is the exit code that asks for a retry (EX_TEMPFAIL).
const ExecExitTransient = outbound.ExitTempFail

// ExecConfig configures an exec sink.
type ExecConfig struct {
	Command []string
	// Env holds KEY=VALUE pairs added to Environ.
	Env []string
	// Environ is the environment commands start from (nil: schedd's own).
	Environ []string
	Dir     string
	// Timeout bounds one attempt (default 30 s); a command still running is killed and the
	// attempt is transient.
	Timeout time.Duration
	// TransientCodes are exit codes retried besides 75; every other non-zero code is permanent.
	TransientCodes []int
	// Run runs the command (required: the daemon gives platform.RunCommand).
	Run outbound.RunFunc
}

// ExecSink runs a command with the payload on stdin. Exit 0 is delivered; 75 (and the
// configured codes), a signal, a timeout or a failure to start are transient; any other exit
// code is permanent. The command sees SCHEDD_DELIVERY_ID, SCHEDD_IDEMPOTENCY_KEY,
// SCHEDD_ATTEMPT and SCHEDD_SINK.
type ExecSink struct {
	cfg ExecConfig
}

// NewExecSink checks the configuration and builds the sink.
func NewExecSink(cfg ExecConfig) (*ExecSink, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("exec sink: empty command")
	}
	if cfg.Run == nil {
		return nil, errors.New("exec sink: no RunFunc")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &ExecSink{cfg: cfg}, nil
}

// Send runs the command once.
func (s *ExecSink) Send(ctx context.Context, d Delivery) error {
	env := append(append([]string(nil), s.cfg.Env...),
		"SCHEDD_DELIVERY_ID="+strconv.FormatInt(d.ID, 10),
		"SCHEDD_IDEMPOTENCY_KEY="+d.Key,
		"SCHEDD_ATTEMPT="+strconv.Itoa(d.Attempt),
		"SCHEDD_SINK="+d.Sink,
	)
	name := s.cfg.Command[0]
	r := s.cfg.Run.Run(ctx, outbound.Command{Argv: s.cfg.Command, Env: outbound.Environ(s.cfg.Environ, env...),
		Dir: s.cfg.Dir, Stdin: d.Payload, Timeout: s.cfg.Timeout})
	if r.Err != nil {
		return TransientError(fmt.Errorf("exec %s: %w", name, r.Err))
	}
	v := outbound.ExitVerdict(r.Exit, s.cfg.TransientCodes...)
	switch {
	case v.Class == outbound.Success:
		return nil
	case !r.Exit.Exited:
		return TransientError(fmt.Errorf("exec %s: killed by %s%s", name, r.Exit.SignalName, outbound.Tail(r.Stderr, snippetLen)))
	}
	msg := fmt.Errorf("exec %s: exit status %d%s", name, r.Exit.Code, outbound.Tail(r.Stderr, snippetLen))
	class := Permanent
	if v.Class == outbound.Transient {
		class = Transient
	}
	return &SendError{Class: class, Err: msg, Status: r.Exit.Code}
}

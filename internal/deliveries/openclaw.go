package deliveries

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/openclaw"
)

// OpenClawConfig configures an OpenClaw sink.
type OpenClawConfig struct {
	// URL is the gateway's hook: http://127.0.0.1:18789/hooks/agent or .../hooks/wake.
	URL string
	// Token is the gateway's hooks.token (a secret).
	Token string
	// Timeout bounds one attempt (default 10 s).
	Timeout time.Duration
	// Client defaults to one like an HTTP sink's.
	Client *http.Client
}

// OpenClawSink posts the payload (the hook's JSON body) to an OpenClaw hook with the hook
// token and the entry's idempotency key. A 2xx {"ok": true} is delivered; 503 (suspended
// or restarting), 429, other 5xx and network errors are transient, with the Retry-After
// kept; a refusal (400, 401, 403, 404, 405, 413, or {"ok": false}) is permanent and its
// dead letter quotes the gateway.
type OpenClawSink struct {
	http  *HTTPSink
	token string
}

// NewOpenClawSink checks the configuration and builds the sink.
func NewOpenClawSink(cfg OpenClawConfig) (*OpenClawSink, error) {
	if cfg.Token == "" {
		return nil, errors.New("openclaw sink: no token")
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	openclaw.Authorize(hdr, cfg.Token)
	h, err := NewHTTPSink(HTTPConfig{Method: http.MethodPost, URL: cfg.URL, Timeout: cfg.Timeout, Client: cfg.Client,
		Headers: map[string]string{"Content-Type": hdr.Get("Content-Type"), "Authorization": hdr.Get("Authorization")}})
	if err != nil {
		return nil, fmt.Errorf("openclaw sink: %w", err)
	}
	return &OpenClawSink{http: h, token: cfg.Token}, nil
}

// Send posts the delivery once.
func (s *OpenClawSink) Send(ctx context.Context, d Delivery) error {
	if d.Key == "" {
		d.Key = fmt.Sprintf("schedd-delivery-%d", d.ID)
	}
	resp, err := s.http.exchange(ctx, d, 64<<10)
	if err != nil {
		return err
	}
	r := openclaw.Classify(resp.Code, resp.Header, resp.Body, time.Now())
	if r.Class == openclaw.Accepted {
		return nil
	}
	msg := openclaw.Scrub(r.Message, s.token)
	se := &SendError{Class: Transient, Err: errors.New("openclaw: " + msg), Status: resp.Code, RetryAfter: r.RetryAfter}
	if r.Class == openclaw.Refused {
		se.Class, se.Detail, se.RetryAfter = Permanent, msg, 0
	}
	return se
}

// Package probe checks a gateway from the outside: is it ready, is it alive, how much work
// does it have in flight. Each probe is one small value with a Check or Inflight method;
// the supervisor and the restart coordinator decide what to do with the answers.
//
// A probe never blocks past its context: callers bound every check with a timeout, and a
// check that times out or fails for any reason is a failed check (for idle probes: "not idle").
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/schedd/schedd/internal/outbound"
)

// Checker answers readiness and liveness questions: nil means ready (or alive).
type Checker interface {
	Check(ctx context.Context) error
}

// Counter reports the number of requests the gateway has in flight (0 means idle).
type Counter interface {
	Inflight(ctx context.Context) (int, error)
}

// sameHostClient follows redirects on the probed host only: a probe's headers may carry a
// token, and a redirect must not hand them to another host.
var sameHostClient = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("redirected to another host (%s): not followed", req.URL.Host)
	}
	return nil
}}

// maxBody caps how much of an HTTP probe's reply is read.
const maxBody = 1 << 20

// HTTP probes a URL with GET. A 2xx reply passes. With Pointer set, the reply must be JSON
// and the value at that JSON pointer (RFC 6901) must be true. For Inflight, Pointer must
// name a number.
type HTTP struct {
	URL     string
	Pointer string
	Headers map[string]string // sent with every request; values are never logged
	Client  *http.Client      // nil: a client without redirects to other hosts
}

// Check implements Checker.
func (p HTTP) Check(ctx context.Context) error {
	body, err := p.get(ctx)
	if err != nil {
		return err
	}
	if p.Pointer == "" {
		return nil
	}
	v, err := Lookup(body, p.Pointer)
	if err != nil {
		return err
	}
	if b, ok := v.(bool); !ok || !b {
		return fmt.Errorf("GET %s: %s is %s, want true", p.URL, p.Pointer, describe(v))
	}
	return nil
}

// Inflight implements Counter: the number at Pointer.
func (p HTTP) Inflight(ctx context.Context) (int, error) {
	body, err := p.get(ctx)
	if err != nil {
		return 0, err
	}
	v, err := Lookup(body, p.Pointer)
	if err != nil {
		return 0, err
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("GET %s: %s is %s, want a number", p.URL, p.Pointer, describe(v))
	}
	f, err := n.Float64()
	if err != nil || f < 0 {
		return 0, fmt.Errorf("GET %s: %s is %s, want a number ≥ 0", p.URL, p.Pointer, n)
	}
	return int(f), nil
}

func (p HTTP) get(ctx context.Context) ([]byte, error) {
	hdr := make(http.Header, len(p.Headers))
	for k, v := range p.Headers {
		hdr.Set(k, v)
	}
	c := p.Client
	if c == nil {
		c = sameHostClient
	}
	r := outbound.Exchange(ctx, c, outbound.Request{Method: http.MethodGet, URL: p.URL, Header: hdr, MaxBody: maxBody})
	switch {
	case r.Fault == outbound.FaultRequest:
		return nil, fmt.Errorf("probe request: %w", r.Err)
	case !r.Replied():
		return nil, fmt.Errorf("GET %s: %w", p.URL, outbound.WithoutURL(r.Err))
	case r.Fault != outbound.NoFault:
		return nil, fmt.Errorf("GET %s: read reply: %w", p.URL, r.Err)
	case !r.OK():
		return nil, fmt.Errorf("GET %s: status %d", p.URL, r.Code)
	}
	return r.Body, nil
}

// TCP passes when a connection to Address succeeds.
type TCP struct {
	Address string
}

// Check implements Checker.
func (p TCP) Check(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.Address)
	if err != nil {
		return fmt.Errorf("connect %s: %w", p.Address, err)
	}
	return c.Close()
}

// Exec runs a command: exit 0 passes. For Inflight, exit 0 means idle and any other exit
// means busy (reported as 1 in flight, or the number the command prints on stdout).
type Exec struct {
	Argv []string
	Env  []string         // nil: the caller's environment as platform.RunCommand sees it
	Run  outbound.RunFunc // nil: platform.RunCommand
}

func (p Exec) run(ctx context.Context) (outbound.Ran, error) {
	r := p.Run.Run(ctx, outbound.Command{Argv: p.Argv, Env: p.Env, MaxOutput: 4096})
	if r.Err != nil {
		return r, fmt.Errorf("run %s: %w", p.name(), r.Err)
	}
	return r, nil
}

func (p Exec) name() string {
	if len(p.Argv) == 0 {
		return "(no command)"
	}
	return p.Argv[0]
}

// Check implements Checker.
func (p Exec) Check(ctx context.Context) error {
	res, err := p.run(ctx)
	if err != nil {
		return err
	}
	if !res.Exit.Exited || res.Exit.Code != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if msg != "" {
			return fmt.Errorf("%s: %s: %s", p.name(), res.Exit, msg)
		}
		return fmt.Errorf("%s: %s", p.name(), res.Exit)
	}
	return nil
}

// Inflight implements Counter.
func (p Exec) Inflight(ctx context.Context) (int, error) {
	res, err := p.run(ctx)
	if err != nil {
		return 0, err
	}
	if res.Exit.Exited && res.Exit.Code == 0 {
		return 0, nil
	}
	if !res.Exit.Exited {
		return 0, fmt.Errorf("%s: %s", p.name(), res.Exit)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout))); err == nil && n > 0 {
		return n, nil
	}
	return 1, nil
}

// Lookup evaluates an RFC 6901 JSON pointer against a JSON document. Numbers come back as
// json.Number.
func Lookup(doc []byte, pointer string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reply is not JSON: %w", err)
	}
	if pointer == "" {
		return v, nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("JSON pointer %q must start with /", pointer)
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[tok]
			if !ok {
				return nil, fmt.Errorf("JSON pointer %s: no key %q", pointer, tok)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, fmt.Errorf("JSON pointer %s: no index %q", pointer, tok)
			}
			v = cur[i]
		default:
			return nil, fmt.Errorf("JSON pointer %s: %q is inside %s", pointer, tok, describe(cur))
		}
	}
	return v, nil
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

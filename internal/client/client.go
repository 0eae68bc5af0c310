// Package client is the typed client of schedd's control API: one method per route of
// server.Routes, over the daemon's owner-only unix socket. Every CLI command that speaks to
// a running schedd does it through a Client; the request and reply types are internal/api's.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// ErrNoDaemon means nothing listens on the control socket.
var ErrNoDaemon = errors.New("no schedd is running")

// maxReply bounds what the client reads of one reply.
const maxReply = 64 << 20

// Client talks to a daemon over its control socket: an http.Client whose transport dials
// the socket, whatever host the URL names. Requests may be made from many goroutines;
// connections are kept alive between them.
type Client struct {
	Socket string
	HTTP   *http.Client
}

// New returns a client for the socket at path.
func New(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{Socket: path, HTTP: &http.Client{Transport: tr}}
}

// Close closes the client's idle connections.
func (c *Client) Close() { c.HTTP.CloseIdleConnections() }

// Status fetches GET /v1/status.
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var st api.Status
	err := c.Do(ctx, http.MethodGet, "/v1/status", nil, &st)
	return st, err
}

// StatusRaw fetches GET /v1/status as raw JSON (for --json output of fields this client
// may not know).
func (c *Client) StatusRaw(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.Do(ctx, http.MethodGet, "/v1/status", nil, &raw)
	return raw, err
}

// Do sends a request with an optional JSON body and decodes a JSON reply into out (if
// non-nil; a *json.RawMessage gets the reply as it is). A non-2xx reply is returned as
// *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	code, data, err := c.Raw(ctx, method, path, b)
	if err != nil {
		return err
	}
	if code < 200 || code > 299 {
		return replyError(method, path, code, data)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode reply of %s %s: %w", method, path, err)
	}
	return nil
}

// Raw sends body (nil: none) as it is, as JSON, and returns the reply's status and body
// whatever the status: for a request whose bytes matter as they are (a script's own
// JSON, which encoding/json would change), and for reading a refusal's reply.
func (c *Client) Raw(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://schedd"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, c.dialError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return 0, nil, fmt.Errorf("read reply of %s %s: %w", method, path, err)
	}
	return resp.StatusCode, data, nil
}

// dialError says what to do about a request that got no reply.
func (c *Client) dialError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("control socket %s: %w", c.Socket, ctxErr)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("%w on %s (start it with `schedd run`, or point --socket or $SCHEDD_SOCKET at the right one)", ErrNoDaemon, c.Socket)
	}
	if errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("control socket %s: permission denied (it is owner-only: run as the user that runs schedd)", c.Socket)
	}
	return fmt.Errorf("control socket %s: %w", c.Socket, err)
}

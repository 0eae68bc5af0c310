package control

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
)

// ErrNoDaemon means nothing listens on the control socket.
var ErrNoDaemon = errors.New("no schedd is running")

// Client talks to a daemon over its control socket.
type Client struct {
	Socket string
	hc     *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	return &Client{
		Socket: path,
		hc: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
			DisableKeepAlives: true,
		}},
	}
}

// Status fetches GET /v1/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
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
// non-nil). A non-2xx reply is returned as *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://schedd"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("%w on %s (start it with `schedd run`, or point --socket or $SCHEDD_SOCKET at the right one)", ErrNoDaemon, c.Socket)
		}
		if errors.Is(err, syscall.EACCES) {
			return fmt.Errorf("control socket %s: permission denied (it is owner-only: run as the user that runs schedd)", c.Socket)
		}
		return fmt.Errorf("control socket %s: %w", c.Socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			eb.Error.Status = resp.StatusCode
			return &eb.Error
		}
		return &APIError{Status: resp.StatusCode, Code: CodeInternal, Message: fmt.Sprintf("%s %s: status %d", method, path, resp.StatusCode)}
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

package control

import (
	"bufio"
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

	"github.com/schedd/schedd/internal/early"
)

// ErrNoDaemon means nothing listens on the control socket.
var ErrNoDaemon = errors.New("no schedd is running")

// Client talks to a daemon over its control socket. Each request has a connection of its
// own, written and read by the calling goroutine: a command-line call makes one request,
// and net/http's Transport would start two goroutines and a connection pool for it.
type Client struct {
	Socket string
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	return &Client{Socket: path}
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

// Do sends a request with an optional JSON body (a json.RawMessage is sent as it is) and
// decodes a JSON reply into out (if non-nil). A non-2xx reply is returned as *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	var raw []byte
	if r, ok := body.(json.RawMessage); ok {
		raw = r
		rd = bytes.NewReader(raw)
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		raw = b
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://schedd"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Close = true // one request per connection
	resp, err := c.roundTrip(ctx, req, raw)
	if err != nil {
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

// roundTrip dials the socket, writes req and reads the reply head; the caller reads and
// closes the body, which closes the connection. ctx bounds all of it.
func (c *Client) roundTrip(ctx context.Context, req *http.Request, body []byte) (*http.Response, error) {
	conn, sent, err := earlyConn(c.Socket, req.Method, req.URL.Path, body)
	if err != nil {
		return nil, err
	}
	if conn == nil {
		var d net.Dialer
		if conn, err = d.DialContext(ctx, "unix", c.Socket); err != nil {
			return nil, err
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		return nil, err
	}
	if !sent {
		bw := bufio.NewWriterSize(conn, 4<<10)
		if err := req.Write(bw); err != nil {
			return fail(err)
		}
		if err := bw.Flush(); err != nil {
			return fail(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fail(err)
	}
	resp.Body = &connBody{ReadCloser: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

// earlyConn returns the connection on which package early already sent this request, if
// it did (sent is then true), to read the reply from.
func earlyConn(socket, method, path string, body []byte) (conn net.Conn, sent bool, err error) {
	f := early.Take(socket, method, path, body)
	if f == nil {
		return nil, false, nil
	}
	defer f.Close()
	if conn, err = net.FileConn(f); err != nil {
		return nil, false, err // the request went out: it is not sent twice
	}
	return conn, true, nil
}

// connBody closes the connection with the reply's body.
type connBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

func (b *connBody) Close() error {
	b.stop()
	err := b.ReadCloser.Close()
	b.conn.Close()
	return err
}

package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/schedd/schedd/internal/api"
)

// maxStreamLine bounds one line of a streamed reply the client accepts.
const maxStreamLine = 1 << 20

// Stream sends GET path and calls each with every line of the streamed reply until it
// ends (nil), each fails (its error), or ctx ends (ctx's error). A non-2xx reply is an
// *api.Error, no daemon the same error as Do's.
func (c *Client) Stream(ctx context.Context, path string, each func(line []byte) error) error {
	return c.stream(ctx, http.MethodGet, path, nil, each)
}

// stream sends method path with body (JSON, when not nil) and calls each with every line
// of the streamed reply, as Stream does.
func (c *Client) stream(ctx context.Context, method, path string, body any, each func(line []byte) error) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://schedd"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return c.dialError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		return replyError(method, path, resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	for sc.Scan() {
		if err := each(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s %s: a streamed line is over %d bytes", method, path, maxStreamLine)
		}
		return fmt.Errorf("read the stream of %s %s: %w", method, path, err)
	}
	return ctx.Err()
}

// replyError turns a non-2xx reply into the *api.Error it carries.
func replyError(method, path string, status int, data []byte) error {
	var eb api.ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
		eb.Error.Status = status
		return &eb.Error
	}
	return &api.Error{Status: status, Code: api.CodeInternal, Message: fmt.Sprintf("%s %s: status %d", method, path, status)}
}

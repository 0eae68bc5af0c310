// Package server serves schedd's control API: HTTP/1.1 and JSON over a unix socket that
// only its owner may use. It owns the socket (binding, keeping it bound, the peer check),
// the limits every request meets (body cap, request timeout) and every route's handler.
// The handlers reach the running parts of schedd through small interfaces (Backend,
// Lifecycle, Output, Heartbeats, Deliveries, Cron) that the daemon or its components
// satisfy, so this package opens no store and starts nothing.
// Every CLI command is a client of exactly this API (internal/client); the types that
// travel over it are in internal/api.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
)

// Defaults for the server's limits.
const (
	DefaultMaxBody        = 1 << 20
	DefaultRequestTimeout = 30 * time.Second
)

// ErrInUse is returned by Listen when a live daemon already answers on the socket.
var ErrInUse = errors.New("another schedd answers on the control socket")

// Backend gives GET /v1/status its document (the daemon).
type Backend interface {
	Status(ctx context.Context) api.Status
}

// Options configures a Server.
type Options struct {
	Backend        Backend
	Logger         *zap.Logger
	MaxBody        int64         // request bodies above this are refused; default 1 MiB
	RequestTimeout time.Duration // per request; default 30 s
	// PeerCheck vets every connection before it is served (the peer uid check); a non-nil
	// error closes the connection. nil accepts all.
	PeerCheck func(net.Conn) error
}

// Server serves the control API.
type Server struct {
	opts Options
	mux  *http.ServeMux
}

// New returns a server for opts.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	s.Handle("GET /v1/status", s.status)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return s
}

// Handle adds an endpoint (pattern as in http.ServeMux, e.g. "POST /v1/status"). Its
// requests are bounded by the request timeout.
func (s *Server) Handle(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
		defer cancel()
		h(w, r.WithContext(ctx))
	})
}

// HandleLong adds an endpoint whose replies may wait longer than the request timeout
// (`schedd restart --wait`, `schedd logs -f`); it ends when the client goes away or the
// server shuts down.
func (s *Server) HandleLong(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, h) }

// Serve serves ln until ctx ends, then shuts down, waiting up to a few seconds for
// requests in progress.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.opts.PeerCheck != nil {
		ln = &checkedListener{Listener: ln, check: s.opts.PeerCheck, log: s.opts.Logger}
	}
	hs := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       s.opts.RequestTimeout,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(s.opts.Logger.Named("control")),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("control API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		err = errors.Join(err, hs.Close())
	}
	<-errc
	return err
}

// ServeHTTP serves one request as Serve would, in process (fuzz targets and tests).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler().ServeHTTP(w, r) }

// handler wraps the mux with the body cap, a per-request timeout and method/route errors.
func (s *Server) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.opts.MaxBody {
			WriteError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge,
				fmt.Sprintf("request body of %d bytes is over the %d byte limit", r.ContentLength, s.opts.MaxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
		s.mux.ServeHTTP(w, r)
	})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, s.opts.Backend.Status(r.Context()))
}

// WriteJSON writes v as the JSON reply with the given status: compact, one line, as
// every reply of the API is (`schedd ... --json` indents it for people).
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes the standard error reply.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	WriteJSON(w, status, api.ErrorBody{Error: api.Error{Code: code, Message: msg}})
}

// DecodeJSON decodes a request body strictly into v: unknown fields, trailing data and
// bodies over the cap are errors, written to w as 400/413 replies. It reports whether
// decoding succeeded. An empty body leaves v unchanged.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true
	}
	if err == nil {
		if _, err2 := dec.Token(); !errors.Is(err2, io.EOF) {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			WriteError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge,
				fmt.Sprintf("request body is over the %d byte limit", mbe.Limit))
			return false
		}
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("%s %s: invalid JSON body: %v", r.Method, r.URL.Path, err))
		return false
	}
	return true
}

// checkedListener closes connections whose peer fails the check.
type checkedListener struct {
	net.Listener
	check func(net.Conn) error
	log   *zap.Logger
}

func (l *checkedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := l.check(c); err != nil {
			l.log.Warn("refused a control connection", zap.Error(err))
			c.Close()
			continue
		}
		return c, nil
	}
}

// Listen creates the control socket at path with the given file mode. A socket file left
// by a dead daemon is replaced, but only after checking that nothing answers on it; a
// live one is ErrInUse. The parent directory is created (mode 0700) if missing.
func Listen(path string, mode os.FileMode) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("control socket %s: a file that is not a socket is in the way; remove it or choose another --socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("control socket %s: %w", path, ErrInUse)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale control socket: %w", err)
		}
	}
	return bind(path, mode)
}

// bind creates the socket at path with the given mode, and its directory if missing.
func bind(path string, mode os.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("control socket dir: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket mode: %w", err)
	}
	return ln, nil
}

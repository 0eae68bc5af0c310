package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/queue"
	"github.com/schedd/schedd/internal/recovery"
)

// Error codes of the delivery endpoints, beside control's.
const (
	CodePayloadTooLarge = "payload_too_large" // 413: the payload is over deliveries.max_payload
	CodeQueueFull       = "queue_full"        // 503: deliveries.max_entries live entries are stored
	CodeDiskFull        = "disk_full"         // 507: the store's disk is full
	CodeStorage         = "storage_error"     // 500: the store could not commit
)

// DeliveryRequest is the body of POST /v1/deliveries.
type DeliveryRequest struct {
	// Sink names a key of deliveries.sinks. Required.
	Sink string `json:"sink"`
	// Key is the idempotency key; schedd makes one when it is empty. The same key again
	// returns the entry that holds it (200) instead of storing a second one.
	Key string `json:"idempotency_key,omitempty"`
	// Headers are sent with the delivery (http and gateway sinks). Their values are secrets:
	// no reply, log or status shows them.
	Headers  map[string]string `json:"headers,omitempty"`
	Priority int               `json:"priority,omitempty"` // lower is sent first; default 0
	// The payload: Data as text, or DataBase64 for bytes; at most one of them (none: empty).
	Data       *string `json:"data,omitempty"`
	DataBase64 *string `json:"data_base64,omitempty"`
	// TTL overrides deliveries.ttl for this entry (a Go duration).
	TTL string `json:"ttl,omitempty"`
}

// Delivery is an entry as the API shows it: header names only, never their values; the
// payload only in the reply of GET /v1/deliveries/{id}.
type Delivery struct {
	ID            int64       `json:"id"`
	Sink          string      `json:"sink"`
	Key           string      `json:"idempotency_key"`
	State         queue.State `json:"state"`
	Priority      int         `json:"priority"`
	HeaderNames   []string    `json:"header_names,omitempty"`
	PayloadSize   int         `json:"payload_size"`
	Attempts      int         `json:"attempts"`
	Failures      int         `json:"failures"`
	NextAttemptAt *time.Time  `json:"next_attempt_at,omitempty"`
	LastAttemptAt *time.Time  `json:"last_attempt_at,omitempty"`
	LastError     string      `json:"last_error,omitempty"`
	DeadReason    string      `json:"dead_reason,omitempty"`
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
	FinishedAt    *time.Time  `json:"finished_at,omitempty"`
	ExpiresAt     *time.Time  `json:"expires_at,omitempty"`
	Quarantined   bool        `json:"quarantined,omitempty"`
	// Data or DataBase64 is the payload (GET /v1/deliveries/{id} only; a delivered entry
	// keeps no payload).
	Data       *string `json:"data,omitempty"`
	DataBase64 *string `json:"data_base64,omitempty"`
}

// EnqueueReply is the reply of POST /v1/deliveries: 201 with created true once the entry is
// durable, or 200 with the entry that already holds the idempotency key.
type EnqueueReply struct {
	Created bool `json:"created"`
	Delivery
}

// DeliveryList is the reply of GET /v1/deliveries. NextCursor, when not zero, is the cursor
// of the next page.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
	NextCursor int64      `json:"next_cursor,omitempty"`
}

// PurgeRequest is the body of POST /v1/deliveries/purge.
type PurgeRequest struct {
	State     queue.State `json:"state,omitempty"`      // dead (default) or delivered
	OlderThan string      `json:"older_than,omitempty"` // finished more than this long ago (Go duration; default 0s: all)
}

// PurgeReply is the reply of POST /v1/deliveries/purge.
type PurgeReply struct {
	Purged int `json:"purged"`
}

// RecoverRequest is the body of POST /v1/recover.
type RecoverRequest struct {
	DryRun bool `json:"dry_run"`
}

type deliveriesAPI struct {
	svc    *recovery.Service
	path   string
	limits deliveryLimits
}

func (a *deliveriesAPI) routes(srv *control.Server) {
	srv.Handle("POST /v1/deliveries", a.enqueue)
	srv.Handle("GET /v1/deliveries", a.list)
	srv.Handle("POST /v1/deliveries/purge", a.purge)
	srv.Handle("GET /v1/deliveries/{id}", a.get)
	srv.Handle("DELETE /v1/deliveries/{id}", a.drop)
	srv.Handle("POST /v1/deliveries/{id}/retry", a.retry)
	srv.Handle("POST /v1/recover", a.recover)
}

// bodyBufs are the buffers the enqueue endpoint reads its request bodies into.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// jsonContentType is the Content-Type of the enqueue reply (net/http only reads it).
var jsonContentType = []string{"application/json"}

// readBody reads the request body into buf; false after writing the error reply (413 for
// a body over the cap, else the reply control.DecodeJSON gives for a failed read).
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) bool {
	_, err := buf.ReadFrom(r.Body)
	if err == nil {
		return true
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf.Bytes()), errReader{err}))
	var req DeliveryRequest
	control.DecodeJSON(w, r, &req) // writes the reply for err
	return false
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (a *deliveriesAPI) enqueue(w http.ResponseWriter, r *http.Request) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 {
			bodyBufs.Put(buf)
		}
	}()
	if !readBody(w, r, buf) {
		return
	}
	var req DeliveryRequest
	if !decodeDeliveryRequest(buf.Bytes(), &req) {
		// What the hand decoder does not take, encoding/json decides, errors included.
		req = DeliveryRequest{}
		r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
		if !control.DecodeJSON(w, r, &req) {
			return
		}
	}
	bad := func(msg string) { control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, msg) }
	if req.Sink == "" {
		bad("sink: is required (a name from deliveries.sinks" + a.sinkList() + ")")
		return
	}
	var payload []byte
	switch {
	case req.Data != nil && req.DataBase64 != nil:
		bad("data, data_base64: give one of them, not both")
		return
	case req.Data != nil:
		payload = []byte(*req.Data)
	case req.DataBase64 != nil:
		p, err := base64.StdEncoding.DecodeString(*req.DataBase64)
		if err != nil {
			bad("data_base64: not standard base64: " + err.Error())
			return
		}
		payload = p
	}
	rr := recovery.Request{Sink: req.Sink, Key: req.Key, Headers: req.Headers, Payload: payload, Priority: req.Priority}
	if req.TTL != "" {
		ttl, err := time.ParseDuration(req.TTL)
		if err != nil || ttl <= 0 {
			bad("ttl: want a positive Go duration like 15m or 24h, got " + strconv.Quote(req.TTL))
			return
		}
		rr.TTL = ttl
	}
	e, created, err := a.svc.Enqueue(r.Context(), rr)
	if errors.Is(err, recovery.ErrUnknownSink) {
		bad(fmt.Sprintf("sink: no sink %q is configured (deliveries.sinks%s)", req.Sink, a.sinkList()))
		return
	}
	if err != nil {
		a.writeError(w, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	// Compact, unlike control.WriteJSON, and encoded by hand: this is the hot path of a
	// producer.
	v := view(e, false)
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(code)
	if !replyEncodable(&v) {
		_ = json.NewEncoder(w).Encode(EnqueueReply{Created: created, Delivery: v})
		return
	}
	buf.Reset()
	_, _ = w.Write(appendEnqueueReply(buf.AvailableBuffer(), created, &v))
}

func (a *deliveriesAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := queue.Filter{State: queue.State(q.Get("state")), Sink: q.Get("sink"), Limit: 100}
	if f.State != "" && !f.State.Valid() {
		control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest,
			"state: want pending, sending, delivered or dead, got "+strconv.Quote(string(f.State)))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, "limit: want a number from 1 to 1000, got "+strconv.Quote(v))
			return
		}
		f.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, "cursor: want the next_cursor of the previous page, got "+strconv.Quote(v))
			return
		}
		f.AfterID = n
	}
	list, err := a.svc.List(r.Context(), f)
	if err != nil {
		a.writeError(w, err)
		return
	}
	out := DeliveryList{Deliveries: make([]Delivery, 0, len(list))}
	for _, e := range list {
		out.Deliveries = append(out.Deliveries, view(e, false))
	}
	if len(list) == f.Limit {
		out.NextCursor = list[len(list)-1].ID
	}
	control.WriteJSON(w, http.StatusOK, out)
}

// pathID reads the {id} of the path; false after writing the 400 reply.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, "id: want a delivery id (a positive number), got "+strconv.Quote(v))
		return 0, false
	}
	return id, true
}

func (a *deliveriesAPI) get(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	e, err := a.svc.Get(r.Context(), id)
	if err != nil {
		a.writeError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, view(e, true))
}

func (a *deliveriesAPI) drop(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := a.svc.Drop(r.Context(), id); err != nil {
		a.writeError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]int64{"dropped": id})
}

func (a *deliveriesAPI) retry(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	e, err := a.svc.Retry(r.Context(), id)
	if err != nil {
		a.writeError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, view(e, false))
}

func (a *deliveriesAPI) purge(w http.ResponseWriter, r *http.Request) {
	var req PurgeRequest
	if !control.DecodeJSON(w, r, &req) {
		return
	}
	if req.State == "" {
		req.State = queue.StateDead
	}
	if req.State != queue.StateDead && req.State != queue.StateDelivered {
		control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest,
			"state: want dead or delivered, got "+strconv.Quote(string(req.State)))
		return
	}
	var older time.Duration
	if req.OlderThan != "" {
		d, err := time.ParseDuration(req.OlderThan)
		if err != nil || d < 0 {
			control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest,
				"older_than: want a Go duration like 72h, got "+strconv.Quote(req.OlderThan))
			return
		}
		older = d
	}
	n, err := a.svc.Purge(r.Context(), req.State, older)
	if err != nil {
		a.writeError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, PurgeReply{Purged: n})
}

func (a *deliveriesAPI) recover(w http.ResponseWriter, r *http.Request) {
	var req RecoverRequest
	if !control.DecodeJSON(w, r, &req) {
		return
	}
	if !req.DryRun {
		control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest,
			`dry_run: only {"dry_run": true} is supported: the recovery pass runs at every start of schedd, `+
				"and the runtime keeps every pending entry armed after it")
		return
	}
	rep, err := a.svc.RecoverDryRun(r.Context())
	if err != nil {
		a.writeError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, rep)
}

func (a *deliveriesAPI) sinkList() string {
	names := a.svc.Sinks()
	if len(names) == 0 {
		return "; none is configured"
	}
	return ": " + strings.Join(names, ", ")
}

// writeError maps a delivery error to its status and a message that says what happened and
// whether anything was stored.
func (a *deliveriesAPI) writeError(w http.ResponseWriter, err error) {
	var bound *queue.BoundError
	var mismatch *queue.KeyMismatchError
	switch {
	case errors.As(err, &bound) && errors.Is(err, queue.ErrPayloadTooLarge):
		control.WriteError(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			fmt.Sprintf("data: the payload of %d bytes is over deliveries.max_payload (%d bytes); nothing was stored", bound.Got, bound.Limit))
	case errors.Is(err, queue.ErrQueueFull):
		control.WriteError(w, http.StatusServiceUnavailable, CodeQueueFull,
			fmt.Sprintf("the delivery queue holds its limit of %d pending entries (deliveries.max_entries); nothing was stored; "+
				"enqueue again once it has drained", a.limits.entries))
	case errors.Is(err, queue.ErrDiskFull):
		control.WriteError(w, 507, CodeDiskFull,
			fmt.Sprintf("the disk of the delivery store %s is full: nothing was stored. Deliveries already stored are still sent; "+
				"enqueue works again once space is freed", a.path))
	case errors.As(err, &mismatch):
		control.WriteError(w, http.StatusConflict, control.CodeConflict,
			fmt.Sprintf("idempotency_key: %q belongs to delivery %d, which has another sink or payload; nothing was stored",
				mismatch.Key, mismatch.Existing.ID))
	case errors.Is(err, queue.ErrInvalid):
		control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, strings.TrimPrefix(err.Error(), "enqueue: "))
	case errors.Is(err, queue.ErrNotFound):
		control.WriteError(w, http.StatusNotFound, control.CodeNotFound, err.Error())
	case errors.Is(err, queue.ErrBusy):
		control.WriteError(w, http.StatusConflict, control.CodeConflict, err.Error()+"; try again when the attempt is over")
	case errors.Is(err, queue.ErrWrongState):
		control.WriteError(w, http.StatusConflict, control.CodeConflict, err.Error())
	case errors.Is(err, queue.ErrClosed):
		control.WriteError(w, http.StatusServiceUnavailable, control.CodeUnavailable, "schedd is stopping: nothing was stored")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		control.WriteError(w, http.StatusServiceUnavailable, control.CodeTimeout, err.Error())
	case errors.Is(err, queue.ErrStorage), errors.Is(err, queue.ErrCorrupt):
		control.WriteError(w, http.StatusInternalServerError, CodeStorage,
			fmt.Sprintf("the delivery store %s could not commit: nothing was stored (%v)", a.path, err))
	default:
		control.WriteError(w, http.StatusInternalServerError, control.CodeInternal, err.Error())
	}
}

// view is how the API shows e; withPayload adds the payload, as text when it is UTF-8.
func view(e queue.Entry, withPayload bool) Delivery {
	v := Delivery{
		ID: e.ID, Sink: e.Sink, Key: e.Key, State: e.State, Priority: e.Priority, PayloadSize: e.PayloadSize,
		Attempts: e.Attempts, Failures: e.Failures, LastError: e.LastError, DeadReason: e.DeadReason,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Quarantined: e.Quarantined,
		LastAttemptAt: timePtr(e.LastAttemptAt), FinishedAt: timePtr(e.FinishedAt), ExpiresAt: timePtr(e.ExpiresAt),
	}
	if !e.State.Terminal() {
		v.NextAttemptAt = timePtr(e.NextAttemptAt)
	}
	if len(e.Headers) > 0 {
		v.HeaderNames = slices.Sorted(maps.Keys(e.Headers))
	}
	if withPayload && len(e.Payload) == e.PayloadSize && e.State != queue.StateDelivered {
		if utf8.Valid(e.Payload) {
			s := string(e.Payload)
			v.Data = &s
		} else {
			s := base64.StdEncoding.EncodeToString(e.Payload)
			v.DataBase64 = &s
		}
	}
	return v
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

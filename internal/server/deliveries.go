package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/store"
)

// Deliveries is what the delivery endpoints need of the delivery service
// (deliveries.Service).
type Deliveries interface {
	Enqueue(ctx context.Context, r deliveries.Request) (store.Entry, bool, error)
	EnqueueBatch(ctx context.Context, rs []deliveries.Request) ([]store.EnqueueResult, error)
	Get(ctx context.Context, id int64) (store.Entry, error)
	List(ctx context.Context, f store.Filter) ([]store.Entry, error)
	Retry(ctx context.Context, id int64) (store.Entry, error)
	Drop(ctx context.Context, id int64) error
	Purge(ctx context.Context, state store.State, olderThan time.Duration, limit int) (int, error)
	RecoverDryRun(ctx context.Context, progress func(scanned int)) (api.RecoveryReport, error)
	Sinks() []string
}

// DeliveryLimits are the bounds the delivery endpoints' error messages name: those the
// store was opened with, and the body cap.
type DeliveryLimits struct {
	Path    string // the store's file or database
	Payload int64  // deliveries.max_payload
	Entries int    // deliveries.max_entries
	MaxBody int    // control.max_body, for the error of a batch over its bounds
}

// AddDeliveries adds the delivery endpoints, served by svc.
func (s *Server) AddDeliveries(svc Deliveries, lim DeliveryLimits) {
	(&deliveriesAPI{svc: svc, lim: lim}).routes(s)
}

// deliveriesAPI serves the delivery endpoints of the control API.
type deliveriesAPI struct {
	svc Deliveries
	lim DeliveryLimits
}

func (a *deliveriesAPI) routes(srv *Server) {
	srv.Handle("POST /v1/deliveries", a.enqueue)
	srv.Handle("GET /v1/deliveries", a.list)
	srv.Handle("POST /v1/deliveries/purge", a.purge)
	srv.Handle("GET /v1/deliveries/{id}", a.get)
	srv.Handle("DELETE /v1/deliveries/{id}", a.drop)
	srv.Handle("POST /v1/deliveries/{id}/retry", a.retry)
	srv.Handle("POST /v1/recover", a.recover)
}

// enqueue stores one delivery (a JSON object) or a batch of them (a JSON array).
func (a *deliveriesAPI) enqueue(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	if firstByte(body) == '[' {
		a.enqueueBatch(w, r, body)
		return
	}
	var req api.DeliveryRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	msg := requestText(body)
	if msg == "" {
		var rr deliveries.Request
		rr, msg = a.request(req)
		if msg == "" {
			e, created, err := a.svc.Enqueue(r.Context(), rr)
			if err != nil {
				writeAPIError(w, a.enqueueError(err, req.Sink))
				return
			}
			code := http.StatusOK
			if created {
				code = http.StatusCreated
			}
			WriteJSON(w, code, api.EnqueueReply{Created: created, Delivery: DeliveryView(e, false)})
			return
		}
	}
	WriteError(w, http.StatusBadRequest, api.CodeBadRequest, msg)
}

// enqueueBatch stores the entries of a JSON array in one commit and answers 200 with one
// result per entry, in order: each entry is checked and stored as a request of its own
// would be, and an entry's error (with the code and message that request would have had,
// naming the entry's index) keeps out that entry only. An error that is the whole batch's
// (the store could not commit: disk full, I/O error, stopping) is the reply of a single
// request, and then nothing was stored.
func (a *deliveriesAPI) enqueueBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	var reqs []api.DeliveryRequest
	if !DecodeJSON(w, r, &reqs) {
		return
	}
	switch {
	case len(reqs) == 0:
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "the array of deliveries is empty: give at least one")
		return
	case len(reqs) > api.MaxBatch:
		WriteError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge,
			fmt.Sprintf("%d deliveries in one request: a batch holds at most %d (and its body at most %d bytes, control.max_body); "+
				"nothing was stored: send them in several requests", len(reqs), api.MaxBatch, a.lim.MaxBody))
		return
	}
	rep := api.BatchReply{Results: make([]api.BatchResult, len(reqs))}
	rrs := make([]deliveries.Request, 0, len(reqs))
	at := make([]int, 0, len(reqs)) // the index in reqs of each request of rrs
	bad := batchText(body)
	for i, req := range reqs {
		rr, msg := a.request(req)
		if m, ok := bad[i]; ok {
			msg = m
		}
		if msg != "" {
			rep.Results[i].Error = entryError(i, &api.Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: msg})
			continue
		}
		rrs = append(rrs, rr)
		at = append(at, i)
	}
	if len(rrs) > 0 {
		res, err := a.svc.EnqueueBatch(r.Context(), rrs)
		if err != nil {
			writeAPIError(w, a.enqueueError(err, ""))
			return
		}
		for j, x := range res {
			i := at[j]
			if x.Err != nil {
				rep.Results[i].Error = entryError(i, a.enqueueError(x.Err, reqs[i].Sink))
				continue
			}
			rep.Results[i] = api.BatchResult{ID: x.Entry.ID, Created: x.Created}
		}
	}
	for _, x := range rep.Results {
		switch {
		case x.Error != nil:
			rep.Failed++
		case x.Created:
			rep.Created++
		default:
			rep.Existing++
		}
	}
	WriteJSON(w, http.StatusOK, rep)
}

// requestFields are the fields of api.DeliveryRequest, as error messages begin with them.
var requestFields = []string{"sink", "idempotency_key", "headers", "priority", "data", "data_base64", "data, data_base64", "ttl"}

// entryError makes e the error of entry i of a batch: its message names the entry,
// "[3].sink: is required" when it begins with a field of the request, else "[3]: ...".
func entryError(i int, e *api.Error) *api.Error {
	sep := ": "
	if field, _, ok := strings.Cut(e.Message, ": "); ok && slices.Contains(requestFields, field) {
		sep = "."
	}
	e.Message = fmt.Sprintf("[%d]%s%s", i, sep, e.Message)
	return e
}

// request checks req and turns it into what the service stores; a message names the field
// that is wrong.
func (a *deliveriesAPI) request(req api.DeliveryRequest) (deliveries.Request, string) {
	if req.Sink == "" {
		return deliveries.Request{}, "sink: is required (a name from deliveries.sinks" + a.sinkList() + ")"
	}
	if p := api.KeyProblem(req.Key); p != "" {
		return deliveries.Request{}, "idempotency_key: " + p
	}
	for _, name := range slices.Sorted(maps.Keys(req.Headers)) {
		if i := strings.IndexFunc(req.Headers[name], badHeaderRune); i >= 0 {
			return deliveries.Request{}, fmt.Sprintf("headers: the value of %q has the control character %U at byte %d: a sink cannot receive it",
				name, req.Headers[name][i], i)
		}
	}
	var payload []byte
	switch {
	case req.Data != nil && req.DataBase64 != nil:
		return deliveries.Request{}, "data, data_base64: give one of them, not both"
	case req.Data != nil:
		payload = []byte(*req.Data)
	case req.DataBase64 != nil:
		p, err := base64.StdEncoding.DecodeString(*req.DataBase64)
		if err != nil {
			return deliveries.Request{}, "data_base64: not standard base64: " + err.Error()
		}
		payload = p
	}
	rr := deliveries.Request{Sink: req.Sink, Key: req.Key, Headers: req.Headers, Payload: payload, Priority: req.Priority}
	if req.TTL != "" {
		ttl, err := time.ParseDuration(req.TTL)
		if err != nil || ttl <= 0 {
			return deliveries.Request{}, "ttl: want a positive Go duration like 15m or 24h, got " + strconv.Quote(req.TTL)
		}
		rr.TTL = ttl
	}
	return rr, ""
}

// badHeaderRune reports the characters that an HTTP header value cannot carry: the ASCII
// control characters but tab.
func badHeaderRune(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }

func (a *deliveriesAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.Filter{State: store.State(q.Get("state")), Sink: q.Get("sink"), Limit: 100}
	if f.State != "" && !f.State.Valid() {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest,
			"state: want pending, sending, delivered or dead, got "+strconv.Quote(string(f.State)))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "limit: want a number from 1 to 1000, got "+strconv.Quote(v))
			return
		}
		f.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "cursor: want the next_cursor of the previous page, got "+strconv.Quote(v))
			return
		}
		f.AfterID = n
	}
	list, err := a.svc.List(r.Context(), f)
	if err != nil {
		a.writeError(w, err)
		return
	}
	out := api.DeliveryList{Deliveries: make([]api.Delivery, 0, len(list))}
	for _, e := range list {
		out.Deliveries = append(out.Deliveries, DeliveryView(e, false))
	}
	if len(list) == f.Limit {
		out.NextCursor = list[len(list)-1].ID
	}
	WriteJSON(w, http.StatusOK, out)
}

// pathID reads the {id} of the path; false after writing the 400 reply.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "id: want a delivery id (a positive number), got "+strconv.Quote(v))
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
	WriteJSON(w, http.StatusOK, DeliveryView(e, true))
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
	WriteJSON(w, http.StatusOK, api.DropReply{Dropped: id})
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
	WriteJSON(w, http.StatusOK, DeliveryView(e, false))
}

func (a *deliveriesAPI) purge(w http.ResponseWriter, r *http.Request) {
	var req api.PurgeRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	if req.State == "" {
		req.State = api.DeliveryDead
	}
	if req.State != api.DeliveryDead && req.State != api.DeliveryDelivered {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest,
			"state: want dead or delivered, got "+strconv.Quote(string(req.State)))
		return
	}
	var older time.Duration
	if req.OlderThan != "" {
		d, err := time.ParseDuration(req.OlderThan)
		if err != nil || d < 0 {
			WriteError(w, http.StatusBadRequest, api.CodeBadRequest,
				"older_than: want a Go duration like 72h, got "+strconv.Quote(req.OlderThan))
			return
		}
		older = d
	}
	if req.Limit < 0 || req.Limit > api.MaxPurgeLimit {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest,
			fmt.Sprintf("limit: want 0 (all) or a number from 1 to %d, got %d", api.MaxPurgeLimit, req.Limit))
		return
	}
	n, err := a.svc.Purge(r.Context(), store.State(req.State), older, req.Limit)
	if err != nil {
		a.writeError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, api.PurgeReply{Purged: n})
}

func (a *deliveriesAPI) recover(w http.ResponseWriter, r *http.Request) {
	var req api.RecoverRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	if !req.DryRun {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest,
			`dry_run: only {"dry_run": true} is supported: the recovery pass runs at every start of schedd, `+
				"and the runtime keeps every pending entry armed after it")
		return
	}
	if req.Progress {
		a.recoverStream(w, r)
		return
	}
	rep, err := a.svc.RecoverDryRun(r.Context(), nil)
	if err != nil {
		a.writeError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, rep)
}

// recoverStream answers a dry run with progress: the count of live entries read after each
// page, then the report (or the error) on the last line. A client that is gone ends the
// pass through the request's context.
func (a *deliveriesAPI) recoverStream(w http.ResponseWriter, r *http.Request) {
	out := NewStream(w)
	rep, err := a.svc.RecoverDryRun(r.Context(), func(n int) {
		_ = out.Send(api.RecoverProgress{Scanned: n})
	})
	last := api.RecoverProgress{Scanned: rep.Scanned, Report: &rep}
	if err != nil {
		last = api.RecoverProgress{Error: a.errorReply(err)}
	}
	_ = out.Send(last)
}

func (a *deliveriesAPI) sinkList() string {
	names := a.svc.Sinks()
	if len(names) == 0 {
		return "; none is configured"
	}
	return ": " + strings.Join(names, ", ")
}

// writeError writes the reply of a delivery error (see errorReply).
func (a *deliveriesAPI) writeError(w http.ResponseWriter, err error) {
	writeAPIError(w, a.errorReply(err))
}

func writeAPIError(w http.ResponseWriter, e *api.Error) {
	WriteError(w, e.Status, e.Code, e.Message)
}

// enqueueError is errorReply for an enqueue of an entry for sink.
func (a *deliveriesAPI) enqueueError(err error, sink string) *api.Error {
	if errors.Is(err, deliveries.ErrUnknownSink) {
		return &api.Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest,
			Message: fmt.Sprintf("sink: no sink %q is configured (deliveries.sinks%s)", sink, a.sinkList())}
	}
	return a.errorReply(err)
}

// errorReply maps a delivery error to its status, code and a message that says what
// happened and whether anything was stored.
func (a *deliveriesAPI) errorReply(err error) *api.Error {
	var bound *store.BoundError
	var mismatch *store.KeyMismatchError
	switch {
	case errors.As(err, &bound) && errors.Is(err, store.ErrPayloadTooLarge):
		return &api.Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodePayloadTooLarge,
			Message: fmt.Sprintf("data: the payload of %d bytes is over deliveries.max_payload (%d bytes); nothing was stored", bound.Got, bound.Limit)}
	case errors.Is(err, store.ErrQueueFull):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: api.CodeQueueFull,
			Message: fmt.Sprintf("the delivery queue holds its limit of %d pending entries (deliveries.max_entries); nothing was stored; "+
				"enqueue again once it has drained", a.lim.Entries)}
	case errors.Is(err, store.ErrDiskFull):
		return &api.Error{Status: 507, Code: api.CodeDiskFull,
			Message: fmt.Sprintf("the disk of the delivery store %s is full: nothing was stored. Deliveries already stored are still sent; "+
				"enqueue works again once space is freed", a.lim.Path)}
	case errors.As(err, &mismatch):
		return &api.Error{Status: http.StatusConflict, Code: api.CodeConflict,
			Message: fmt.Sprintf("idempotency_key: %q belongs to delivery %d, which has another sink or payload; nothing was stored",
				mismatch.Key, mismatch.Existing.ID)}
	case errors.Is(err, store.ErrInvalid):
		return &api.Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: strings.TrimPrefix(err.Error(), "enqueue: ")}
	case errors.Is(err, store.ErrNotFound):
		return &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrBusy):
		return &api.Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: err.Error() + "; try again when the attempt is over"}
	case errors.Is(err, store.ErrWrongState):
		return &api.Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: err.Error()}
	case errors.Is(err, store.ErrClosed):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "schedd is stopping: nothing was stored"}
	case errors.Is(err, store.ErrOutcomeUnknown):
		code := api.CodeUnavailable
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			code = api.CodeTimeout
		}
		return &api.Error{Status: http.StatusServiceUnavailable, Code: code,
			Message: "the delivery store's database did not confirm the commit (the connection broke once it was sent): " +
				"it may have been stored or not; an enqueue can be made again with the same idempotency_key once the " +
				"database is back (an entry is stored once per key)"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: api.CodeTimeout, Message: err.Error()}
	case errors.Is(err, store.ErrUnavailable):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
			Message: "the delivery store's database cannot be reached: nothing was stored; enqueue again once it is back"}
	case errors.Is(err, store.ErrStorage), errors.Is(err, store.ErrCorrupt):
		return &api.Error{Status: http.StatusInternalServerError, Code: api.CodeStorage,
			Message: fmt.Sprintf("the delivery store %s could not commit: nothing was stored (%v)", a.lim.Path, err)}
	}
	return &api.Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: err.Error()}
}

// DeliveryView is how the API shows e; withPayload adds the payload, as text when it is UTF-8.
func DeliveryView(e store.Entry, withPayload bool) api.Delivery {
	v := api.Delivery{
		ID: e.ID, Sink: e.Sink, Key: e.Key, State: api.DeliveryState(e.State), Priority: e.Priority, PayloadSize: e.PayloadSize,
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
	if withPayload && len(e.Payload) == e.PayloadSize && e.State != store.StateDelivered {
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

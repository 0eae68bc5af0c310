package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// Every store failure has its status and says that nothing was stored; a full disk is 507.
func TestDeliveryErrorReplies(t *testing.T) {
	a := &deliveriesAPI{lim: DeliveryLimits{Path: "/var/lib/schedd/schedd.db", Payload: 1 << 20, Entries: 1000}}
	for _, tc := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{fmt.Errorf("enqueue: %w: no space", store.ErrDiskFull), 507, api.CodeDiskFull,
			"the disk of the delivery store /var/lib/schedd/schedd.db is full: nothing was stored. Deliveries already stored are still sent"},
		{fmt.Errorf("enqueue: %w: disk I/O error", store.ErrStorage), 500, api.CodeStorage, "could not commit: nothing was stored"},
		{fmt.Errorf("enqueue: %w (%w): dial tcp: connection refused", store.ErrUnavailable, store.ErrStorage), 503, api.CodeUnavailable,
			"database cannot be reached: nothing was stored"},
		{fmt.Errorf("enqueue: %w", store.ErrClosed), 503, api.CodeUnavailable, "schedd is stopping"},
		{fmt.Errorf("enqueue: %w", &store.BoundError{Err: store.ErrQueueFull, Limit: 1000, Got: 1001}), 503, api.CodeQueueFull, "limit of 1000"},
		{fmt.Errorf("drop delivery 3: %w", store.ErrBusy), 409, api.CodeConflict, "try again"},
		{context.DeadlineExceeded, 503, api.CodeTimeout, "deadline"},
	} {
		w := httptest.NewRecorder()
		a.writeError(w, tc.err)
		var body api.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != tc.status || body.Error.Code != tc.code || !strings.Contains(body.Error.Message, tc.msg) {
			t.Errorf("%v: %d %+v, want %d %s with %q", tc.err, w.Code, body.Error, tc.status, tc.code, tc.msg)
		}
	}
}

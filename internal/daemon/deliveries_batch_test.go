package daemon

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/api"
)

// POST /v1/deliveries with an array: each entry is checked and stored as a request of its
// own would be, its error (code, and a message naming its index and field) keeps out that
// entry only, the reply lists every entry's result in order, and the stored ones are
// armed and delivered.
func TestEnqueueBatchAPI(t *testing.T) {
	dd, hook := startHook(t)
	ctx, cl := t.Context(), dd.cl

	var rep api.BatchReply
	err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", []api.DeliveryRequest{
		{Sink: "hook", Key: "b-1", Data: ptr("one")},
		{Data: ptr("x")},
		{Sink: "hoook"},
		{Sink: "hook", Data: ptr(strings.Repeat("x", 1025))},
		{Sink: "hook", Key: "b-1", Data: ptr("one")},
		{Sink: "hook", Key: "b-1", Data: ptr("two")},
		{Sink: "hook", Headers: map[string]string{"Bad Name": "v"}},
		{Sink: "hook", Key: "b-2", DataBase64: ptr("AP8=")},
	}, &rep)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created != 2 || rep.Existing != 1 || rep.Failed != 5 || len(rep.Results) != 8 {
		t.Fatalf("reply %+v", rep)
	}
	first, second := rep.Results[0], rep.Results[7]
	if !first.Created || first.ID == 0 || first.Error != nil || !second.Created || second.ID <= first.ID {
		t.Fatalf("stored results %+v, %+v", first, second)
	}
	if r := rep.Results[4]; r.Created || r.ID != first.ID || r.Error != nil {
		t.Fatalf("the same key again: %+v, want delivery %d, not created", r, first.ID)
	}
	for i, want := range map[int]api.Error{
		1: {Code: api.CodeBadRequest, Message: "[1].sink: is required (a name from deliveries.sinks: down, hook, reject)"},
		2: {Code: api.CodeBadRequest, Message: `[2].sink: no sink "hoook" is configured (deliveries.sinks: down, hook, reject)`},
		3: {Code: api.CodePayloadTooLarge, Message: "[3].data: the payload of 1025 bytes is over deliveries.max_payload (1024 bytes); nothing was stored"},
		5: {Code: api.CodeConflict, Message: fmt.Sprintf(`[5].idempotency_key: "b-1" belongs to delivery %d, which has another sink or payload; nothing was stored`, first.ID)},
		6: {Code: api.CodeBadRequest, Message: `[6]: invalid delivery: header name "Bad Name"`},
	} {
		if got := rep.Results[i]; got.Error == nil || got.Error.Code != want.Code || got.Error.Message != want.Message || got.ID != 0 {
			t.Errorf("[%d] = %+v, want error %+v", i, got.Error, want)
		}
	}
	dd.waitState(t, first.ID, api.DeliveryDelivered)
	if v := dd.waitState(t, second.ID, api.DeliveryDelivered); v.Key != "b-2" || v.PayloadSize != 2 {
		t.Fatalf("second entry %+v", v)
	}
	if _, bodies := hook.requests(); len(bodies) != 2 {
		t.Fatalf("the sink got %q, want the two stored entries", bodies)
	}

	// The bounds of a batch, and a body that is not an array of requests.
	postErrors(t, cl, []postError{
		{"empty", []api.DeliveryRequest{}, 400, api.CodeBadRequest, "the array of deliveries is empty"},
		{"over the cap", make([]api.DeliveryRequest, api.MaxBatch+1), 413, api.CodeTooLarge,
			"1001 deliveries in one request: a batch holds at most 1000 (and its body at most 2097152 bytes, control.max_body); nothing was stored"},
		{"unknown field", []map[string]any{{"sink": "hook", "payload": "x"}}, 400, api.CodeBadRequest, `unknown field "payload"`},
		{"not requests", []int{1}, 400, api.CodeBadRequest, "invalid JSON body"},
	})
}

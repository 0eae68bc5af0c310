package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// postRaw posts body to POST /v1/deliveries as it is (client.Client would encode it, and
// encoding/json replaces bytes that are not UTF-8) and returns the status and the reply.
func postRaw(t *testing.T, cl *client.Client, body string) (int, []byte) {
	t.Helper()
	code, b, err := cl.Raw(t.Context(), http.MethodPost, "/v1/deliveries", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// stored lists every stored delivery.
func (dd *deliveryDaemon) stored(t *testing.T) []api.Delivery {
	t.Helper()
	var l api.DeliveryList
	if err := dd.cl.Do(t.Context(), http.MethodGet, "/v1/deliveries?limit=1000", nil, &l); err != nil {
		t.Fatal(err)
	}
	return l.Deliveries
}

// R-INPUT-03: an idempotency key that a sink cannot receive as it was given (blank, over
// 255 bytes, control characters, white space at an end) is refused with 400 naming the
// field, alone and in a batch (with the entry's index), and nothing is stored, and so is
// a header value with a control character; the keys that are fine reach the sink
// unchanged.
func TestEnqueueKeyRules_RINPUT03(t *testing.T) {
	dd, hook := startHook(t)
	ctx, cl := t.Context(), dd.cl
	bad := map[string]string{
		"   ":                    "idempotency_key: is blank",
		"a\nb":                   "idempotency_key: has the control character U+000A at byte 1",
		"a\r\nX-Evil: 1":         "idempotency_key: has the control character U+000D at byte 1",
		"nul\x00":                "idempotency_key: has the control character U+0000 at byte 3",
		"\x1b[2J":                "idempotency_key: has the control character U+001B at byte 0",
		"tab\t":                  "idempotency_key: has the control character U+0009",
		strings.Repeat("k", 256): "idempotency_key: is 256 bytes long: at most 255",
		" padded ":               "idempotency_key: begins or ends with white space",
	}
	var cases []postError
	for key, msg := range bad {
		cases = append(cases, postError{fmt.Sprintf("key %q", key), api.DeliveryRequest{Sink: "hook", Key: key, Data: ptr("x")}, 400, api.CodeBadRequest, msg})
	}
	cases = append(cases, postError{"header value", api.DeliveryRequest{Sink: "hook", Headers: map[string]string{"X-A": "a\x01b"}}, 400, api.CodeBadRequest,
		`headers: the value of "X-A" has the control character U+0001 at byte 1: a sink cannot receive it`})
	postErrors(t, cl, cases)

	var rep api.BatchReply
	batch := []api.DeliveryRequest{{Sink: "hook", Key: "fine", Data: ptr("a")}, {Sink: "hook", Key: "   ", Data: ptr("b")}, {Sink: "hook", Key: "x\ny", Data: ptr("c")}}
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", batch, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Created != 1 || rep.Failed != 2 {
		t.Fatalf("batch reply %+v", rep)
	}
	for i, want := range map[int]string{1: "[1].idempotency_key: is blank", 2: "[2].idempotency_key: has the control character U+000A at byte 1"} {
		if e := rep.Results[i].Error; e == nil || e.Code != api.CodeBadRequest || !strings.HasPrefix(e.Message, want) {
			t.Errorf("[%d] = %+v, want %q", i, e, want)
		}
	}

	long := strings.Repeat("k", api.MaxKeyLen)
	for _, key := range []string{long, "ключ 42/😀"} {
		var e api.EnqueueReply
		if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: key, Data: ptr("z")}, &e); err != nil || !e.Created {
			t.Fatalf("key %q: %+v, %v", key, e, err)
		}
		dd.waitState(t, e.ID, api.DeliveryDelivered)
	}
	if n := len(dd.stored(t)); n != 3 {
		t.Fatalf("%d entries stored, want the 3 with good keys", n)
	}
	reqs, _ := hook.requests()
	got := map[string]bool{}
	for _, r := range reqs {
		got[r.Header.Get("Idempotency-Key")] = true
	}
	if len(got) != 3 || !got["fine"] || !got[long] || !got["ключ 42/😀"] {
		t.Fatalf("the sink got the keys %v", got)
	}
}

// R-INPUT-04: data that is not UTF-8 (raw bytes, or an escaped UTF-16 surrogate without
// its other half) is refused with 400 pointing at data_base64, alone and in a batch,
// never stored with U+FFFD in place of what was sent; the same for the other fields. Text
// that is UTF-8, escaped or not, surrogate pairs included, is stored as it was sent.
func TestEnqueueDataUTF8_RINPUT04(t *testing.T) {
	dd, hook := startHook(t)
	for _, tc := range []struct{ body, msg string }{
		{`{"sink": "hook", "data": "a` + "\xff" + `b"}`, "data: is not valid UTF-8 (the byte 0xff); send bytes that are not UTF-8 text as data_base64"},
		{`{"sink": "hook", "data": "` + "\xc3" + `"}`, "data: is not valid UTF-8 (the byte 0xc3)"},
		{`{"sink": "hook", "data": "\ud800"}`, `data: holds \ud800, half of a UTF-16 surrogate pair without the other half`},
		{`{"sink": "hook", "data": "x\uDC00\ud83d"}`, `data: holds \uDC00`},
		{`{"sink": "hook", "data": "\ud83d\u0041"}`, `data: holds \ud83d`},
		{`{"sink": "hook", "DATA": "` + "\xfe" + `"}`, "data: is not valid UTF-8 (the byte 0xfe)"},
		{`{"sink": "hook", "data": "x", "idempotency_key": "k` + "\xff" + `"}`, "idempotency_key: is not valid UTF-8 (the byte 0xff); it must be UTF-8 text"},
		{`{"sink": "hook", "headers": {"X-A": "` + "\x80" + `"}}`, "headers: is not valid UTF-8 (the byte 0x80)"},
	} {
		code, b := postRaw(t, dd.cl, tc.body)
		var eb api.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || code != 400 || eb.Error.Code != api.CodeBadRequest || !strings.HasPrefix(eb.Error.Message, tc.msg) {
			t.Errorf("%q: %d %s, want 400 %q", tc.body, code, b, tc.msg)
		}
	}

	code, b := postRaw(t, dd.cl, `[{"sink": "hook", "data": "fine"}, {"sink": "hook", "data": "`+"\xff"+`"}, {"sink": "hook", "data": "\udfff"}]`)
	var rep api.BatchReply
	if err := json.Unmarshal(b, &rep); err != nil || code != 200 || rep.Created != 1 || rep.Failed != 2 {
		t.Fatalf("batch: %d %s", code, b)
	}
	for i, want := range map[int]string{1: "[1].data: is not valid UTF-8 (the byte 0xff); send bytes", 2: `[2].data: holds \udfff`} {
		if e := rep.Results[i].Error; e == nil || e.Code != api.CodeBadRequest || !strings.HasPrefix(e.Message, want) {
			t.Errorf("[%d] = %+v, want %q", i, e, want)
		}
	}
	if n := len(dd.stored(t)); n != 1 {
		t.Fatalf("%d entries stored, want the one that is text", n)
	}
	dd.waitState(t, rep.Results[0].ID, api.DeliveryDelivered)

	// What is text is stored as it was sent: escapes, pairs, and U+FFFD sent on purpose.
	for body, want := range map[string]string{
		`{"sink": "hook", "data": "\ud83d\ude00 \u00e9 é \\ud800"}`: "😀 é é \\ud800",
		`{"sink": "hook", "data": "\ufffd` + "\uFFFD" + `"}`:        "\uFFFD\uFFFD",
	} {
		code, b := postRaw(t, dd.cl, body)
		var e api.EnqueueReply
		if err := json.Unmarshal(b, &e); err != nil || code != 201 {
			t.Fatalf("%q: %d %s", body, code, b)
		}
		dd.waitState(t, e.ID, api.DeliveryDelivered)
		if _, bodies := hook.requests(); bodies[len(bodies)-1] != want {
			t.Errorf("%q: the sink got %q, want %q", body, bodies[len(bodies)-1], want)
		}
	}
}

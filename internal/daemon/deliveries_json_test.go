package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/schedd/schedd/internal/queue"
)

// strictDecode decodes body as control.DecodeJSON does: unknown fields and trailing data
// are errors.
func strictDecode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

var requestSeeds = []string{
	`{"sink":"hook","idempotency_key":"one-1","data":"xxxxxxxx"}`,
	`{"sink":"hook","data":"{\"text\": \"hi\\n\"}","priority":-3,"ttl":"15m"}`,
	` { "sink" : "hook" , "headers" : { "Authorization" : "Bearer x", "X-A": "b" } , "data_base64":"aGk=" } `,
	`{"sink":"hook","headers":{}}`,
	`{}`,
	`{"sink":"hook","data":"café ☕"}`,
	`{"sink":"hook","data":"a\/b\b\f\r\t"}`,
	`{"sink":"hook","data":"caf\u00e9"}`,
	`{"sink":"hook","Sink":"other"}`,
	`{"sink":"hook","sink":"twice"}`,
	`{"sink":"hook","data":null}`,
	`{"sink":"hook","priority":1.5}`,
	`{"sink":"hook","priority":1e3}`,
	`{"sink":"hook","priority":01}`,
	`{"sink":"hook","priority":-0}`,
	`{"sink":"hook","priority":99999999999999999999}`,
	`{"sink":"hook","unknown":1}`,
	`{"sink":"hook"} {"sink":"again"}`,
	`{"sink":"hook",}`,
	`{"sink":"hook"`,
	`{"sink":"ho` + "\x01" + `ok"}`,
	`{"sink":"ho` + "\xff" + `ok"}`,
	`{"sink":"hook","headers":{"a":"1","a":"2"}}`,
	`{"sink":"hook","headers":{"a":1}}`,
	`[]`,
	``,
	`   `,
}

// The hand decoder of the enqueue request, fuzzed against encoding/json: whatever it
// accepts, the strict encoding/json decoding accepts too, with the same result.
func FuzzDecodeDeliveryRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast DeliveryRequest
		if !decodeDeliveryRequest(body, &fast) {
			return
		}
		var want DeliveryRequest
		if err := strictDecode(body, &want); err != nil {
			t.Fatalf("hand decoder accepted %q, encoding/json: %v", body, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q: hand decoder %+v, encoding/json %+v", body, fast, want)
		}
	})
}

// What producers send takes the hand decoder's path.
func TestDecodeDeliveryRequestFastPath(t *testing.T) {
	for _, s := range requestSeeds[:7] {
		var req DeliveryRequest
		if !decodeDeliveryRequest([]byte(s), &req) {
			t.Errorf("declined %s", s)
		}
	}
	for _, s := range requestSeeds[7:] {
		var req DeliveryRequest
		if decodeDeliveryRequest([]byte(s), &req) && strictDecode([]byte(s), new(DeliveryRequest)) != nil {
			t.Errorf("accepted %q", s)
		}
	}
}

// The hand encoder of the enqueue reply writes encoding/json's bytes.
func TestEnqueueReplyEncoding(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9._-]{0,20}`),
		rapid.SampledFrom([]string{"", "<b>&amp;</b>", "\u2028\u2029", "\xff\xfe", "tab\there", `q"uo\te`}))
	instant := rapid.Custom(func(t *rapid.T) time.Time {
		tm := time.Unix(rapid.Int64Range(-62135596800, 253370764800).Draw(t, "s"), rapid.Int64Range(0, 999999999).Draw(t, "ns"))
		if rapid.Bool().Draw(t, "utc") {
			return tm.UTC()
		}
		return tm.In(time.FixedZone("z", rapid.IntRange(-12*3600, 14*3600).Draw(t, "off")))
	})
	opt := func(t *rapid.T, name string) *time.Time {
		if rapid.Bool().Draw(t, name+"?") {
			v := instant.Draw(t, name)
			return &v
		}
		return nil
	}
	optStr := func(t *rapid.T, name string) *string {
		if rapid.Bool().Draw(t, name+"?") {
			v := str.Draw(t, name)
			return &v
		}
		return nil
	}
	rapid.Check(t, func(t *rapid.T) {
		v := Delivery{
			ID: rapid.Int64().Draw(t, "id"), Sink: str.Draw(t, "sink"), Key: str.Draw(t, "key"),
			State:    queue.State(rapid.SampledFrom([]string{"pending", "sending", "delivered", "dead", "<x>"}).Draw(t, "state")),
			Priority: rapid.Int().Draw(t, "prio"), HeaderNames: rapid.SliceOfN(str, 0, 3).Draw(t, "headers"),
			PayloadSize: rapid.IntRange(0, 1<<20).Draw(t, "size"), Attempts: rapid.Int().Draw(t, "attempts"),
			Failures: rapid.Int().Draw(t, "failures"), NextAttemptAt: opt(t, "next"), LastAttemptAt: opt(t, "last"),
			LastError: str.Draw(t, "lasterr"), DeadReason: str.Draw(t, "reason"), CreatedAt: instant.Draw(t, "created"),
			UpdatedAt: instant.Draw(t, "updated"), FinishedAt: opt(t, "finished"), ExpiresAt: opt(t, "expires"),
			Quarantined: rapid.Bool().Draw(t, "q"), Data: optStr(t, "data"), DataBase64: optStr(t, "b64"),
		}
		created := rapid.Bool().Draw(t, "created?")
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(EnqueueReply{Created: created, Delivery: v}); err != nil {
			t.Fatal(err)
		}
		if !replyEncodable(&v) {
			t.Fatalf("times within years 0-9999 not encodable: %+v", v)
		}
		if got := appendEnqueueReply(nil, created, &v); string(got) != want.String() {
			t.Fatalf("hand encoder:\n%s\nencoding/json:\n%s", got, want.String())
		}
	})
	far := Delivery{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if replyEncodable(&far) {
		t.Fatal("year 10000 taken as encodable")
	}
}

// TestRestartRequestEncoding: RestartRequest.AppendJSON writes encoding/json's bytes for
// every request, so the daemon reads what `schedd restart` meant.
func TestRestartRequestEncoding(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9 ._-]{0,20}`),
		rapid.SampledFrom([]string{"", "<b>&amp;</b>", "\u2028\u2029", "\xff\xfe", "tab\there", `q"uo\te`}))
	rapid.Check(t, func(t *rapid.T) {
		r := RestartRequest{
			Reason: str.Draw(t, "reason"), Now: rapid.Bool().Draw(t, "now"), Wait: rapid.Bool().Draw(t, "wait"),
			MaxWait: str.Draw(t, "max_wait"), Delay: str.Draw(t, "delay"), Source: str.Draw(t, "source"),
			Daemon: rapid.Bool().Draw(t, "daemon"),
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON = %s\nencoding/json = %s", got, want)
		}
	})
}

// Package servertest is test support for the control API's server: the checks every reply
// of every endpoint must pass, for the fuzz targets of the server and of the daemon.
package servertest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/schedd/schedd/internal/api"
)

// Serve serves method target with body through h, in process, and fails t unless the
// reply is what every reply of the control API must be: JSON, never a 5xx, and an error
// with a code and a message. It returns the status and the reply.
func Serve(t *testing.T, h http.Handler, method, target string, body []byte) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, bytes.NewReader(body)))
	out := rec.Body.Bytes()
	if rec.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, out)
	}
	if !json.Valid(out) {
		t.Fatalf("%s %s %q: %d, a reply that is not JSON: %q", method, target, body, rec.Code, out)
	}
	if rec.Code >= 400 {
		var eb api.ErrorBody
		if err := json.Unmarshal(out, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Fatalf("%s %s %q: %d, not an error body: %s", method, target, body, rec.Code, out)
		}
	}
	return rec.Code, out
}

package server

import (
	"encoding/json"
	"net/http"
)

// StreamWriter writes a reply as newline-delimited JSON (application/x-ndjson), one
// value per line, each flushed to the client as it is written.
type StreamWriter struct {
	rc  *http.ResponseController
	enc *json.Encoder
}

// NewStream starts a 200 streamed reply on w.
func NewStream(w http.ResponseWriter) *StreamWriter {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	return &StreamWriter{rc: http.NewResponseController(w), enc: json.NewEncoder(w)}
}

// Send writes v as one line; it returns an error once the client is gone.
func (s *StreamWriter) Send(v any) error {
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	return s.rc.Flush()
}

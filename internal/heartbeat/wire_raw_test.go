//go:build linux && !race

package heartbeat

import (
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestWireRawIO: on Linux (without the race detector) a kept connection is read and written
// with raw system calls (wire_raw.go). Pulses go through that path whole, the connection is
// kept, and a target that does not answer ends in the read deadline, reported as net.Conn
// reports it.
func TestWireRawIO(t *testing.T) {
	w := pulsesOnOneConnection(t, 3)
	c := w.pool.take(time.Now().Add(time.Minute), w.addr)
	if c == nil {
		t.Fatal("no kept connection after three pulses")
	}
	if c.raw == nil {
		t.Fatal("the kept connection does not use raw system calls")
	}
	w.pool.put(c)

	hold := make(chan struct{})
	silent := newRawTarget(t, func(string, []byte) (string, bool) { <-hold; return "", true })
	defer close(hold)
	ws := newTestWire(t, silent.url(), http.MethodPost, nil)
	_, _, err := ws.exchange(t.Context(), time.Now().Add(50*time.Millisecond), samplePulse())
	var op *net.OpError
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &op) || op.Op != "read" {
		t.Fatalf("silent target: %v, want a read timeout as a *net.OpError", err)
	}
}

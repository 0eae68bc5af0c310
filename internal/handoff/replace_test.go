package handoff

import (
	"context"
	"testing"
)

// TestReplaceDisabled: with SCHEDD_NO_RESPAWN the daemon keeps running, nothing is handed
// over, and the next request is answered again (one at a time, not once ever).
func TestReplaceDisabled(t *testing.T) {
	var r Replacer
	s := Setup{Environ: []string{EnvNoRespawn + "=0", EnvNoRespawn + "=yes"}, ServiceManager: "none",
		HandOver: func(*Exit) bool { t.Fatal("handed over while disabled"); return false }}
	for range 2 {
		res, err := r.Replace(context.Background(), s)
		if err != nil || res.Mode != string(Disabled) || res.PID != 0 || res.Detail == "" {
			t.Fatalf("got %+v, %v", res, err)
		}
	}
}

// TestReplaceBusy: while a replacement is under way, another is refused.
func TestReplaceBusy(t *testing.T) {
	var r Replacer
	if !r.begin() {
		t.Fatal("a fresh Replacer is busy")
	}
	if _, err := r.Replace(context.Background(), Setup{}); err != ErrBusy {
		t.Fatalf("err %v, want ErrBusy", err)
	}
	r.end()
	if !r.begin() {
		t.Fatal("still busy after end")
	}
}

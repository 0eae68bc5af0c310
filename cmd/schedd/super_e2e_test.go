//go:build unix

package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestE2EPortServedBySidecar_RINPUT07 is R-INPUT-07 with real processes: another process
// (here the test, a health sidecar) serves the port the readiness probe names, on
// purpose. With gateway.ports naming what the gateway itself binds, or [], schedd does not
// wait for the sidecar's port: the gateway starts at once and the sidecar makes it ready.
func TestE2EPortServedBySidecar_RINPUT07(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	own, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the gateway's own
	if err != nil {
		t.Fatal(err)
	}
	ownAddr := own.Addr().String()
	own.Close()
	for _, ports := range []string{"[]", `["` + ownAddr + `"]`} {
		t.Run(ports, func(t *testing.T) {
			cfg := writeConfig(t, "gateway:\n  readiness: {http: {url: \"http://"+addr+"/readyz\"}, timeout: 30s}\n  ports: "+ports+"\n")
			start := time.Now()
			d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
			d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("ready after %v: schedd waited for the sidecar's port", took)
			}
			if out := d.out.String(); strings.Contains(out, "still in use") {
				t.Errorf("schedd waited for the sidecar's port:\n%s", out)
			}
		})
	}
}

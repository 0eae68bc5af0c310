//go:build schedd_pprof

package main

// A profiling build for bench/deliveries (go build -tags schedd_pprof): with
// SCHEDD_PPROF_ADDR set (a loopback address such as 127.0.0.1:6061), the process serves
// net/http/pprof there, so the daemon can be profiled under the bench load. Release builds
// do not carry it.

import (
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
)

// serveProfiles is called by `schedd run` before the daemon starts.
func serveProfiles() {
	addr := os.Getenv("SCHEDD_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return
	}
	runtime.SetMutexProfileFraction(100)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return
	}
	// Lives as long as the process: a profiling build only.
	go func() { _ = http.Serve(ln, nil) }()
}

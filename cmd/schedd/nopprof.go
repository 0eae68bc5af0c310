//go:build !schedd_pprof

package main

// serveProfiles does nothing in a release build (see deliveries_pprof.go).
func serveProfiles() {}

//go:build !linux

package platform

// processName is not needed beyond Linux: launchd is always pid 1, and the Windows task
// marker is schedd's own variable.
func processName(int) string { return "" }

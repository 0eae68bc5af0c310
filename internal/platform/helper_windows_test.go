//go:build windows

package platform

// runHelper has no modes on Windows yet: the real-process tests are unix only.
func runHelper([]string) int { return 2 }

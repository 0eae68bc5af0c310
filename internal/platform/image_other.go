//go:build !linux

package platform

// ReleaseImagePages does nothing on this system.
func ReleaseImagePages() (int64, error) { return 0, nil }

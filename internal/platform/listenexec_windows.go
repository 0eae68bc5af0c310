//go:build windows

package platform

// ListenExecMain does nothing on Windows, where no listening sockets are passed on.
func ListenExecMain() {}

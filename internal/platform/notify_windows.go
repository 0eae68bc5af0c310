//go:build windows

package platform

import "net"

// NotifySocket is not available on Windows: the gateway reports readiness by other probes.
type NotifySocket struct{}

// ListenNotify returns ErrNotSupported on Windows.
func ListenNotify(string) (*NotifySocket, error) { return nil, ErrNotSupported }

// Path returns "".
func (*NotifySocket) Path() string { return "" }

// Recv returns net.ErrClosed.
func (*NotifySocket) Recv() (NotifyMessage, error) { return NotifyMessage{}, net.ErrClosed }

// Rebind does nothing.
func (*NotifySocket) Rebind() (bool, error) { return false, nil }

// Close does nothing.
func (*NotifySocket) Close() error { return nil }

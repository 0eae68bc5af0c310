//go:build !linux

package platform

import "net"

// PeerUID is not available here; the socket's file mode is the access control.
func PeerUID(net.Conn) (int, error) { return 0, ErrNotSupported }

// CheckPeerIsOwner accepts every connection: on this platform the owner-only mode of the
// socket file is what keeps others out.
func CheckPeerIsOwner(net.Conn) error { return nil }

//go:build unix && !linux

package platform

import (
	"net"

	"golang.org/x/sys/unix"
)

// oobSize leaves room for passed descriptors, which Recv closes.
var oobSize = unix.CmsgSpace(16 * 4)

// enableCredentials is a no-op: datagram senders are not identified here, PID is 0.
func enableCredentials(*net.UnixConn) error { return nil }

func credentialsPID(*unix.SocketControlMessage) (int, bool) { return 0, false }

//go:build linux

package platform

import (
	"net"

	"golang.org/x/sys/unix"
)

// oobSize holds the sender's credentials plus a handful of passed descriptors (which
// Recv closes; the kernel closes any that do not fit).
var oobSize = unix.CmsgSpace(unix.SizeofUcred) + unix.CmsgSpace(16*4)

// enableCredentials sets SO_PASSCRED: the kernel then attaches every sender's
// credentials, whether or not the sender sent them.
func enableCredentials(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

func credentialsPID(m *unix.SocketControlMessage) (int, bool) {
	if m.Header.Type != unix.SCM_CREDENTIALS {
		return 0, false
	}
	cred, err := unix.ParseUnixCredentials(m)
	if err != nil {
		return 0, false
	}
	return int(cred.Pid), true
}

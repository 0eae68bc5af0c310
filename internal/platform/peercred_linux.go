package platform

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// PeerUID returns the uid of the process at the other end of a unix socket connection
// (SO_PEERCRED).
func PeerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("peer credentials: %T is not a unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("peer credentials: %w", serr)
	}
	return int(cred.Uid), nil
}

// CheckPeerIsOwner accepts a control connection only from our own uid (or root).
func CheckPeerIsOwner(c net.Conn) error {
	uid, err := PeerUID(c)
	if err != nil {
		return err
	}
	if uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("peer uid %d is neither schedd's uid %d nor root", uid, os.Getuid())
	}
	return nil
}

//go:build unix

package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// NotifySocket is the unixgram socket schedd owns for the gateway's sd_notify messages.
type NotifySocket struct {
	path string
	conn *net.UnixConn
	buf  []byte
	oob  []byte

	closeOnce sync.Once
	closeErr  error
}

// ListenNotify binds a unixgram socket at path (removing a stale socket file first),
// mode 0600, with SO_PASSCRED on Linux so each message carries its sender's pid.
// Windows: returns ErrNotSupported.
func ListenNotify(path string) (*NotifySocket, error) {
	if err := removeStaleSocket(path); err != nil {
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	s := &NotifySocket{path: path, conn: conn, buf: make([]byte, notifyBufSize), oob: make([]byte, oobSize)}
	if err := os.Chmod(path, 0o600); err != nil {
		s.Close()
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	if err := enableCredentials(conn); err != nil {
		s.Close()
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	return s, nil
}

// Path is where the socket is bound: the child's NOTIFY_SOCKET.
func (s *NotifySocket) Path() string { return s.path }

// Recv blocks for the next datagram; it is not safe for concurrent use. File descriptors passed along (FDSTORE=1) are
// closed: schedd keeps no fd store. After Close it returns an error matching
// net.ErrClosed.
func (s *NotifySocket) Recv() (NotifyMessage, error) {
	n, oobn, flags, _, err := s.conn.ReadMsgUnix(s.buf, s.oob)
	if err != nil {
		return NotifyMessage{}, fmt.Errorf("receive notify message: %w", err)
	}
	msg := NotifyMessage{Fields: parseNotify(s.buf[:n], flags&unix.MSG_TRUNC != 0)}
	if oobn > 0 {
		msg.PID = parseControl(s.oob[:oobn])
	}
	return msg, nil
}

// parseControl closes any passed descriptors and returns the sender's pid when the
// credentials were attached.
func parseControl(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	pid := 0
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch m.Header.Type {
		case unix.SCM_RIGHTS:
			fds, _ := unix.ParseUnixRights(m)
			for _, fd := range fds {
				_ = syscall.Close(fd)
			}
		default:
			if p, ok := credentialsPID(m); ok {
				pid = p
			}
		}
	}
	return pid
}

// Close stops Recv and removes the socket file.
func (s *NotifySocket) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.conn.Close()
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

//go:build unix

package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// NotifySocket is the unixgram socket schedd owns for the gateway's sd_notify messages.
type NotifySocket struct {
	path string
	buf  []byte
	oob  []byte

	mu     sync.Mutex // guards conn (Rebind replaces it) and closed
	conn   *net.UnixConn
	closed bool

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
	conn, err := bindNotify(path)
	if err != nil {
		return nil, err
	}
	return &NotifySocket{path: path, conn: conn, buf: make([]byte, notifyBufSize), oob: make([]byte, oobSize)}, nil
}

// bindNotify binds the unixgram socket at path, mode 0600, with credentials passing.
func bindNotify(path string) (*net.UnixConn, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	err = os.Chmod(path, 0o600)
	if err == nil {
		err = enableCredentials(conn)
	}
	if err != nil {
		conn.Close()
		os.Remove(path)
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	return conn, nil
}

// Rebind binds the socket again at its path if the file is gone (a runtime dir cleaned
// while schedd runs, R-ENV-07), making its directory (0700) if needed, and reports whether
// it did. A Recv in progress goes on with the new socket; what was sent while there was no
// file is lost. After Close it does nothing: the file is gone because Close removed it.
func (s *NotifySocket) Rebind() (bool, error) {
	if s.isClosed() {
		return false, nil
	}
	if _, err := os.Lstat(s.path); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return false, fmt.Errorf("notify socket dir: %w", err)
	}
	conn, err := bindNotify(s.path)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.closed { // closed while binding: take the new file away again
		s.mu.Unlock()
		conn.Close()
		os.Remove(s.path)
		return false, nil
	}
	old := s.conn
	s.conn = conn
	s.mu.Unlock()
	old.Close()
	return true, nil
}

func (s *NotifySocket) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// current is the socket of the moment, and whether conn is no longer it (not closed).
func (s *NotifySocket) current(conn *net.UnixConn) (*net.UnixConn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn, s.conn != conn && !s.closed
}

// Path is where the socket is bound: the child's NOTIFY_SOCKET.
func (s *NotifySocket) Path() string { return s.path }

// Recv blocks for the next datagram; it is not safe for concurrent use. File descriptors passed along (FDSTORE=1) are
// closed: schedd keeps no fd store. After Close it returns an error matching
// net.ErrClosed.
func (s *NotifySocket) Recv() (NotifyMessage, error) {
	conn, _ := s.current(nil)
	n, oobn, flags, _, err := conn.ReadMsgUnix(s.buf, s.oob)
	for err != nil {
		next, replaced := s.current(conn)
		if !replaced {
			return NotifyMessage{}, fmt.Errorf("receive notify message: %w", err)
		}
		conn = next
		n, oobn, flags, _, err = conn.ReadMsgUnix(s.buf, s.oob)
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
		s.mu.Lock()
		s.closed = true
		conn := s.conn
		s.mu.Unlock()
		s.closeErr = conn.Close()
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

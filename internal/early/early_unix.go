//go:build unix

package early

import (
	"os"
	"strconv"
	"syscall"

	"github.com/schedd/schedd/internal/platform/dirs"
)

// DefaultSocket is the control socket when neither --socket nor $SCHEDD_SOCKET names one.
func DefaultSocket() string { return dirs.Runtime() + "/schedd.sock" }

// send connects to r.Socket and writes r in one write, without waiting for the socket: a
// socket that would make it wait (a full listen backlog, a full buffer) is given up, and
// the command sends the request the usual way. Once the request is out, it waits up to
// hold ns for the reply to begin (see awaitReply). It returns nil when nothing went out
// whole.
func send(r Request, hold int64) *Request {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil
	}
	syscall.CloseOnExec(fd)
	if syscall.SetNonblock(fd, true) != nil || syscall.Connect(fd, &syscall.SockaddrUnix{Name: r.Socket}) != nil {
		syscall.Close(fd)
		return nil
	}
	msg := make([]byte, 0, 192+len(r.Body))
	msg = append(msg, r.Method...)
	msg = append(msg, ' ')
	msg = append(msg, r.Path...)
	msg = append(msg, " HTTP/1.1\r\nHost: schedd\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	msg = strconv.AppendInt(msg, int64(len(r.Body)), 10)
	msg = append(msg, "\r\n\r\n"...)
	msg = append(msg, r.Body...)
	if n, err := syscall.Write(fd, msg); err != nil || n != len(msg) {
		syscall.Close(fd)
		return nil
	}
	if hold > 0 {
		awaitReply(fd, hold)
	}
	r.conn = os.NewFile(uintptr(fd), "schedd control socket "+r.Socket)
	return &r
}

// awaitReply blocks until the first byte of the reply can be read from fd, the daemon
// closes it, or ns nanoseconds pass, whichever is first. It peeks: the reply stays whole
// for the control client to read. fd is nonblocking again when it returns.
func awaitReply(fd int, ns int64) {
	if syscall.SetNonblock(fd, false) != nil {
		return
	}
	defer syscall.SetNonblock(fd, true)
	tv := syscall.NsecToTimeval(ns)
	if syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv) != nil {
		return
	}
	defer syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{})
	var b [1]byte
	// A receive with a timeout is not restarted after a signal handler ran (signal(7)):
	// try again a few times, each with the whole timeout; the Go runtime sends no
	// preemption signal to a thread blocked in a system call, so these are rare.
	for range 4 {
		if _, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK); err != syscall.EINTR {
			return
		}
	}
}

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

// send connects to r.Socket and writes r in one write, without waiting for anything: a
// socket that would make it wait (a full listen backlog, a full buffer) is given up, and
// the command sends the request the usual way. It returns nil when nothing went out whole.
func send(r Request) *Request {
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
	r.conn = os.NewFile(uintptr(fd), "schedd control socket "+r.Socket)
	return &r
}

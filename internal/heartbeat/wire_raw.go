//go:build linux && !race

package heartbeat

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// On Linux a kept connection's reads and writes are made as raw system calls on its
// non-blocking socket, through its syscall.RawConn, which still waits in the netpoller
// (and honours the deadlines) when the socket is not ready. A raw call does not tell the
// Go scheduler it entered a system call: a burst of hundreds of pulses a second would
// otherwise wake the runtime's monitor thread at its first write and keep it polling every
// 20 µs until the burst is over, and hand the processor to another thread when a write
// takes long. A write or read on a connected local socket that is ready does not block.

// rawIO is a connection's pending raw read or write: the closures handed to RawConn are
// made once per connection and find their buffer here, so a call allocates nothing.
type rawIO struct {
	buf             []byte
	n               int
	errno           syscall.Errno
	readFn, writeFn func(fd uintptr) bool
}

func (c *wireConn) rawSetup() {
	c.raw = &rawIO{}
	r := c.raw
	r.readFn = func(fd uintptr) bool {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.buf))), uintptr(len(r.buf)))
		r.n, r.errno = int(n), e
		return e != syscall.EAGAIN
	}
	r.writeFn = func(fd uintptr) bool {
		for len(r.buf) > 0 {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.buf))), uintptr(len(r.buf)))
			switch e {
			case 0:
				r.buf = r.buf[n:]
				r.n += int(n)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				r.errno = e
				return true
			}
		}
		return true
	}
}

// reader returns what the connection's replies are read from.
func (c *wireConn) reader() io.Reader {
	if c.rc == nil {
		return c.Conn
	}
	c.rawSetup()
	return rawReader{c}
}

type rawReader struct{ c *wireConn }

func (r rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	raw := r.c.raw
	for {
		raw.buf, raw.n, raw.errno = p, 0, 0
		if err := r.c.rc.Read(raw.readFn); err != nil {
			raw.buf = nil
			return 0, r.c.opError("read", err)
		}
		raw.buf = nil
		switch {
		case raw.errno == syscall.EINTR:
			continue
		case raw.errno != 0:
			return 0, r.c.opError("read", os.NewSyscallError("read", raw.errno))
		case raw.n == 0:
			return 0, io.EOF
		}
		return raw.n, nil
	}
}

// write writes b whole.
func (c *wireConn) write(b []byte) error {
	if c.raw == nil {
		_, err := c.Conn.Write(b)
		return err
	}
	raw := c.raw
	raw.buf, raw.n, raw.errno = b, 0, 0
	err := c.rc.Write(raw.writeFn)
	raw.buf = nil
	if err == nil && raw.errno != 0 {
		err = os.NewSyscallError("write", raw.errno)
	}
	if err != nil {
		return c.opError("write", err)
	}
	return nil
}

// opError wraps err as net.Conn's methods do.
func (c *wireConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

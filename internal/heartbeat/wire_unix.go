//go:build unix

package heartbeat

import (
	"time"

	"golang.org/x/sys/unix"
)

// wireMaxIdle is how long an idle connection is kept: peerClosed sees one the peer closed.
const wireMaxIdle = 90 * time.Second

// peerClosed reports whether the peer closed c (or sent bytes no request asked for) while
// it sat idle, with a peek that does not wait: a kept connection must not carry a pulse
// the target will never read.
func (c *wireConn) peerClosed() bool {
	if c.rc == nil {
		return false
	}
	err := c.rc.Read(c.peek)
	return c.peeked || err != nil
}

// peekFD is peerClosed's read: one byte, peeked, without blocking.
func (c *wireConn) peekFD(fd uintptr) bool {
	var b [1]byte
	n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	c.peeked = n > 0 || (err == nil && n == 0) || (err != nil && err != unix.EAGAIN && err != unix.EWOULDBLOCK && err != unix.EINTR)
	return true
}

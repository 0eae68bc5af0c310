//go:build !linux || race

package heartbeat

import "io"

// rawIO is Linux's; elsewhere, and under the race detector (which learns the order of
// events between goroutines from the syscall package's reads and writes), a kept
// connection is read and written through net.Conn.
type rawIO struct{}

func (c *wireConn) reader() io.Reader { return c.Conn }

func (c *wireConn) write(b []byte) error {
	_, err := c.Conn.Write(b)
	return err
}

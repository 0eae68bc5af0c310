//go:build !unix

package heartbeat

import "time"

// wireMaxIdle is how long an idle connection is kept. peerClosed cannot peek here, so a
// connection is not reused after servers commonly close idle ones (Node.js after 5 s).
const wireMaxIdle = 2 * time.Second

// peerClosed cannot tell without reading; see wireMaxIdle.
func (c *wireConn) peerClosed() bool { return false }

func (c *wireConn) peekFD(uintptr) bool { return true }

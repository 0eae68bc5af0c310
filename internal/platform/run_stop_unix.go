//go:build unix

package platform

import "golang.org/x/sys/unix"

// terminate sends SIGTERM to the whole group.
func (g *runGroup) terminate() error { return g.signal(unix.SIGTERM, false) }

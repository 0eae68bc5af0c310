//go:build windows

package platform

import "os"

// InheritedSockets is nil on Windows: no service manager passes sockets there.
func InheritedSockets() map[string]*os.File { return nil }

//go:build unix

package platform

import (
	"os"

	"github.com/coreos/go-systemd/v22/activation"
)

// InheritedSockets takes the sockets schedd's own service manager passed it with systemd's
// protocol (LISTEN_FDS for this pid), by their LISTEN_FDNAMES name ("LISTEN_FD_<fd>" when
// unnamed), and removes the LISTEN_* variables from schedd's environment. The files are
// close-on-exec: a gateway gets one only when gateway.sockets names it. nil when there are
// none.
func InheritedSockets() map[string]*os.File {
	files := activation.Files(true)
	if len(files) == 0 {
		return nil
	}
	m := make(map[string]*os.File, len(files))
	for _, f := range files {
		m[f.Name()] = f
	}
	return m
}

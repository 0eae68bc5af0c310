// Package platform is schedd's only contact with the operating system: starting the
// gateway in its own process group (unix) or Job object (Windows), signalling and killing
// that group, waiting for it; short commands for probes and exec sinks; the notify socket
// the gateway speaks sd_notify on; sd_notify to our own service manager; signal handling
// and signal names; the default state and runtime directories and the single-instance lock;
// listening sockets held for the gateway and passed on with systemd's protocol, and those
// schedd inherited; detached processes for schedd's replacement of itself; which service
// manager runs schedd, and installing schedd as a service: the unit, plist or task XML
// (and schedd.socket) it writes, and the systemctl, launchctl or schtasks calls that
// register, start and remove it.
//
// Everything OS-specific is split by file suffix; each exported name exists on every
// platform and returns ErrNotSupported where the platform has no equivalent.
package platform

import "errors"

// ErrNotSupported is returned where the platform has no equivalent of an operation.
var ErrNotSupported = errors.New("not supported on this platform")

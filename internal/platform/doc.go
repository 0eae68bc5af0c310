// Package platform is schedd's only contact with the operating system: starting the
// gateway in its own process group (unix) or Job object (Windows), signalling and killing
// that group, waiting for it; short commands for probes and exec sinks; the notify socket
// the gateway speaks sd_notify on; sd_notify to our own service manager; signal handling;
// the default state and runtime directories and the single-instance lock.
//
// Everything OS-specific is split by file suffix; each exported name exists on every
// platform and returns ErrNotSupported where the platform has no equivalent.
package platform

import "errors"

// ErrNotSupported is returned where the platform has no equivalent of an operation.
var ErrNotSupported = errors.New("not supported on this platform")

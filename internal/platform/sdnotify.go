package platform

import (
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// SdNotifier tells our own service manager about us with the sd_notify protocol
// (go-systemd). It never unsets NOTIFY_SOCKET: go-systemd reads it on every call, and
// ChildEnv keeps it from the children instead.
type SdNotifier struct{}

// Notify sends state ("READY=1", "STATUS=...", "WATCHDOG=1", ...). It returns (false, nil)
// when there is no NOTIFY_SOCKET, (false, err) when sending failed.
func (SdNotifier) Notify(state string) (bool, error) {
	return daemon.SdNotify(false, state)
}

// WatchdogInterval returns WATCHDOG_USEC when it is meant for this pid (WATCHDOG_PID
// unset or ours), 0 when the watchdog is off. Ping at half of it.
func (SdNotifier) WatchdogInterval() (time.Duration, error) {
	return daemon.SdWatchdogEnabled(false)
}

// MonotonicUsec returns the "MONOTONIC_USEC=...\n" line to send together with
// "RELOADING=1" (empty where the platform has no CLOCK_MONOTONIC reading).
func (SdNotifier) MonotonicUsec() string {
	return daemon.SdNotifyMonotonicUsec()
}

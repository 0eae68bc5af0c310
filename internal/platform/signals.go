package platform

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrUnknownSignal is returned by ParseSignal for a name or number it does not know.
var ErrUnknownSignal = errors.New("unknown signal")

// ParseSignal accepts "SIGTERM", "TERM", "sigterm", "15". On Windows only SIGTERM,
// SIGINT, SIGKILL and SIGHUP (and their numbers) are known, for config validation.
func ParseSignal(name string) (os.Signal, error) {
	s := strings.TrimSpace(name)
	if s == "" {
		return nil, fmt.Errorf("parse signal %q: %w", name, ErrUnknownSignal)
	}
	if n, err := strconv.Atoi(s); err == nil {
		sig := syscall.Signal(n)
		if n <= 0 || signalByNumber(sig) == "" {
			return nil, fmt.Errorf("parse signal %q: %w", name, ErrUnknownSignal)
		}
		return sig, nil
	}
	upper := strings.ToUpper(s)
	if !strings.HasPrefix(upper, "SIG") {
		upper = "SIG" + upper
	}
	sig, ok := signalByName(upper)
	if !ok {
		return nil, fmt.Errorf("parse signal %q: %w", name, ErrUnknownSignal)
	}
	return sig, nil
}

// SignalName returns "SIGTERM" for syscall.SIGTERM (and os.Interrupt → "SIGINT",
// os.Kill → "SIGKILL"); other os.Signal values are described by their String method.
func SignalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := signalByNumber(s); name != "" {
			return name
		}
		return "SIG" + strconv.Itoa(int(s))
	}
	if sig == nil {
		return ""
	}
	return sig.String()
}

// IsTerminate reports SIGTERM or SIGINT (os.Interrupt).
func IsTerminate(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == os.Interrupt
}

// IsReload reports SIGHUP.
func IsReload(sig os.Signal) bool { return sig == syscall.SIGHUP }

//go:build !linux

package platform

import "os"

// StartReaper is Linux only: elsewhere there is no subreaper to be.
func StartReaper(func(pid int, st ExitStatus)) (stop func(), err error) {
	return nil, ErrNotSupported
}

// Adopted is always empty where schedd adopts nothing.
func Adopted() []AdoptedProcess { return nil }

// SignalAdopted has nothing to signal where schedd adopts nothing.
func SignalAdopted([]AdoptedProcess, os.Signal) ([]AdoptedProcess, error) { return nil, nil }

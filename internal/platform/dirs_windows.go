//go:build windows

package platform

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

func isRoot() bool { return windows.GetCurrentProcessToken().IsElevated() }

func stateDir(e dirEnv) string {
	base := e.absEnv("ProgramData")
	if base == "" {
		base = `C:\ProgramData`
	}
	return filepath.Join(base, "schedd")
}

func runtimeDir(e dirEnv) string { return stateDir(e) }

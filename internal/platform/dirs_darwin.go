//go:build darwin

package platform

import (
	"os"
	"path/filepath"
)

func isRoot() bool { return os.Geteuid() == 0 }

func stateDir(e dirEnv) string {
	if e.root {
		return "/Library/Application Support/schedd"
	}
	return filepath.Join(e.homeOr(), "Library", "Application Support", "schedd")
}

func runtimeDir(e dirEnv) string {
	if e.root {
		return "/var/run/schedd"
	}
	return stateDir(e)
}

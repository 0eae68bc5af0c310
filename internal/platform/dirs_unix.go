//go:build unix && !darwin

package platform

import (
	"os"
	"path/filepath"
)

func isRoot() bool { return os.Geteuid() == 0 }

func stateDir(e dirEnv) string {
	if e.root {
		return "/var/lib/schedd"
	}
	if x := e.absEnv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "schedd")
	}
	return filepath.Join(e.homeOr(), ".local", "state", "schedd")
}

func runtimeDir(e dirEnv) string {
	if e.root {
		return "/run/schedd"
	}
	if x := e.absEnv("XDG_RUNTIME_DIR"); x != "" {
		return filepath.Join(x, "schedd")
	}
	return stateDir(e)
}

//go:build darwin

package dirs

import "os"

func isRoot() bool { return os.Geteuid() == 0 }

func stateDir(e dirEnv) string {
	if e.root {
		return "/Library/Application Support/schedd"
	}
	return join(e.homeOr(), "Library", "Application Support", "schedd")
}

func runtimeDir(e dirEnv) string {
	if e.root {
		return "/var/run/schedd"
	}
	return stateDir(e)
}

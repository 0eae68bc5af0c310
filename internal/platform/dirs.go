package platform

import (
	"os"
	"path/filepath"
)

// dirEnv is what the default directories depend on, injected for tests.
type dirEnv struct {
	getenv func(string) string
	root   bool                   // running as root / administrator
	home   func() (string, error) // os.UserHomeDir
}

func realDirEnv() dirEnv {
	return dirEnv{getenv: os.Getenv, root: isRoot(), home: os.UserHomeDir}
}

// DefaultStateDir is where schedd keeps its store and lock when no --state-dir is given.
// Linux and other unix: root /var/lib/schedd; user $XDG_STATE_HOME/schedd or
// ~/.local/state/schedd. macOS: root /Library/Application Support/schedd; user
// ~/Library/Application Support/schedd. Windows: %ProgramData%\schedd.
func DefaultStateDir() string { return stateDir(realDirEnv()) }

// DefaultRuntimeDir is where the control socket and the notify socket live.
// Linux and other unix: root /run/schedd; user $XDG_RUNTIME_DIR/schedd, else the state
// dir. macOS: root /var/run/schedd; user the state dir. Windows: the state dir.
func DefaultRuntimeDir() string { return runtimeDir(realDirEnv()) }

// DefaultSocket is the control socket when neither --socket nor $SCHEDD_SOCKET names one.
func DefaultSocket() string { return filepath.Join(DefaultRuntimeDir(), "schedd.sock") }

// homeOr returns the home directory, or the temp dir when there is none.
func (e dirEnv) homeOr() string {
	if h, err := e.home(); err == nil && h != "" {
		return h
	}
	return os.TempDir()
}

// absEnv returns the variable only when it holds an absolute path, as the XDG spec asks.
func (e dirEnv) absEnv(key string) string {
	v := e.getenv(key)
	if v == "" || !filepath.IsAbs(v) {
		return ""
	}
	return v
}

package platform

import "github.com/schedd/schedd/internal/platform/dirs"

// DefaultStateDir is where schedd keeps its store and lock when no --state-dir is given
// (see dirs.State).
func DefaultStateDir() string { return dirs.State() }

// DefaultRuntimeDir is where the control socket and the notify socket live (see
// dirs.Runtime).
func DefaultRuntimeDir() string { return dirs.Runtime() }

//go:build unix && !darwin

package platform

import (
	"errors"
	"testing"
)

func TestDefaultDirs(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name          string
		e             dirEnv
		state, runDir string
	}{
		{"root", dirEnv{getenv: env(map[string]string{"XDG_STATE_HOME": "/x"}), root: true, home: home},
			"/var/lib/schedd", "/run/schedd"},
		{"user xdg", dirEnv{getenv: env(map[string]string{"XDG_STATE_HOME": "/xs", "XDG_RUNTIME_DIR": "/run/user/1000"}), home: home},
			"/xs/schedd", "/run/user/1000/schedd"},
		{"user plain", dirEnv{getenv: env(nil), home: home},
			"/home/u/.local/state/schedd", "/home/u/.local/state/schedd"},
		{"relative xdg ignored", dirEnv{getenv: env(map[string]string{"XDG_STATE_HOME": "rel", "XDG_RUNTIME_DIR": "rel"}), home: home},
			"/home/u/.local/state/schedd", "/home/u/.local/state/schedd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stateDir(tt.e); got != tt.state {
				t.Errorf("stateDir = %q, want %q", got, tt.state)
			}
			if got := runtimeDir(tt.e); got != tt.runDir {
				t.Errorf("runtimeDir = %q, want %q", got, tt.runDir)
			}
		})
	}
	if got := stateDir(dirEnv{getenv: env(nil), home: noHome}); got == "" {
		t.Error("no state dir without a home")
	}
	if DefaultStateDir() == "" || DefaultRuntimeDir() == "" {
		t.Error("empty default dirs")
	}
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/platform"
)

// TestInstallSocketUnitSteps_RSOCK06: with a socket unit, install enables and starts the
// socket before the service; when a later step fails, the socket unit goes back out with
// the service (stopped, disabled, removed), and the config that was there stays.
func TestInstallSocketUnitSteps_RSOCK06(t *testing.T) {
	cfg, err := os.ReadFile(socketConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []string{"nothing fails", "start"} {
		t.Run(fail, func(t *testing.T) {
			f := newFakeManager(t, fail)
			paths := platform.DefaultServicePaths(platform.ManagerSystemd, true, pathEnv())
			os.MkdirAll(filepath.Dir(paths.Config), 0o755)
			if err := os.WriteFile(paths.Config, cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			before := f.tree(t)
			code, out, errOut := runCLI("install", "--user", "--manager", platform.ManagerSystemd, "--binary", "/usr/bin/schedd")
			want := []string{
				"systemctl --user show --property=Version",
				"systemctl --user daemon-reload",
				"systemctl --user enable schedd.socket schedd.service",
				"systemctl --user stop schedd.service",
				"systemctl --user restart schedd.socket",
				"systemctl --user start schedd.service",
			}
			if fail == "nothing fails" {
				if code != 0 || !strings.Contains(out, "wrote "+paths.Socket) {
					t.Fatalf("install = %d\n%s%s", code, out, errOut)
				}
				if got := f.calls(t); !slices.Equal(got, want) {
					t.Errorf("calls %q, want %q", got, want)
				}
				if _, err := os.Stat(paths.Socket); err != nil {
					t.Error(err)
				}
				return
			}
			if code != exitFailure || !strings.Contains(errOut, "nothing this install wrote or registered is left") {
				t.Fatalf("install = %d\n%s%s", code, out, errOut)
			}
			want = append(want,
				"systemctl --user disable --now schedd.socket",
				"systemctl --user disable --now schedd.service",
				"systemctl --user daemon-reload")
			if got := f.calls(t); !slices.Equal(got, want) {
				t.Errorf("calls %q, want %q", got, want)
			}
			if after := f.tree(t); !slices.Equal(after, before) {
				t.Errorf("files %q, were %q:\n%s", after, before, out)
			}
		})
	}
}

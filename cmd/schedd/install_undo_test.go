//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/platform"
)

// fakeManager is a service manager's command (systemctl, launchctl, schtasks) for
// `schedd install --user`: a shell script on a PATH of its own that logs every call
// and fails the calls holding the word in $FAKE_FAIL, as the real one does.
type fakeManager struct {
	home string // $HOME, holding every file a user install writes
	log  string
}

func newFakeManager(t *testing.T, fail string) *fakeManager {
	t.Helper()
	dir := t.TempDir()
	f := &fakeManager{home: t.TempDir(), log: filepath.Join(dir, "calls.log")}
	script := `#!/bin/sh
echo "${0##*/} $*" >>"$FAKE_LOG"
for a in "$@"; do
	if [ "$a" = "$FAKE_FAIL" ]; then
		echo "Failed to connect to bus: No medium found" >&2
		exit 1
	fi
done
exit 0
`
	for _, name := range []string{"systemctl", "launchctl", "schtasks"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	t.Setenv("FAKE_LOG", f.log)
	t.Setenv("FAKE_FAIL", fail)
	t.Setenv("HOME", f.home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(f.home, ".config"))
	t.Setenv("APPDATA", filepath.Join(f.home, "AppData", "Roaming"))
	return f
}

func (f *fakeManager) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// tree lists every file and directory under the fake home.
func (f *fakeManager) tree(t *testing.T) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(f.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p != f.home {
			out = append(out, strings.TrimPrefix(p, f.home+"/"))
		}
		return nil
	})
	return out
}

// installCase is one manager: the word its check holds, the word of its last install
// step, and the calls that take a new service back out.
type installCase struct {
	manager, check, lastStep string
	undoNew                  []string
}

func installCases() []installCase {
	gui := "gui/" + strconv.Itoa(os.Getuid())
	return []installCase{
		{platform.ManagerSystemd, "show", "restart",
			[]string{"systemctl --user disable --now schedd.service", "systemctl --user daemon-reload"}},
		{platform.ManagerLaunchd, "print", "kickstart",
			[]string{"launchctl bootout " + gui + "/" + platform.LaunchdLabel}},
		{platform.ManagerSchtasks, "/Query", "/Run",
			[]string{"schtasks /End /TN schedd", "schtasks /Delete /TN schedd /F"}},
	}
}

// TestInstallChecksManagerFirst_RINPUT13: when the service manager does not answer (no
// systemd as init, no user session, no Task Scheduler) or is not there at all, `schedd
// install` fails, says so, and has written nothing: no service file, no config, no
// directory.
func TestInstallChecksManagerFirst_RINPUT13(t *testing.T) {
	for _, c := range installCases() {
		for _, missing := range []bool{false, true} {
			t.Run(c.manager+map[bool]string{false: "/fails", true: "/missing"}[missing], func(t *testing.T) {
				f := newFakeManager(t, c.check)
				if missing {
					t.Setenv("PATH", t.TempDir())
				}
				code, out, errOut := runCLI("install", "--user", "--manager", c.manager, "--binary", "/usr/bin/schedd")
				if code != exitFailure || !strings.Contains(errOut, c.manager+" does not answer") || !strings.Contains(errOut, "nothing was written") {
					t.Fatalf("install = %d\n%s%s", code, out, errOut)
				}
				if tree := f.tree(t); len(tree) > 0 {
					t.Errorf("install left %q behind", tree)
				}
				if calls := f.calls(t); !missing && (len(calls) != 1 || !strings.Contains(calls[0], c.check)) {
					t.Errorf("calls %q: want only the check", calls)
				}
			})
		}
	}
}

// TestInstallUndoesOnFailure_RINPUT13: a service-manager step that fails after the
// files were written takes back exactly what this install did. A new service is
// unregistered, and its file, the config it created and the directories it made are
// removed; a service file that was there before gets its old content back and is
// registered again, and a config that was there before is kept as it was.
func TestInstallUndoesOnFailure_RINPUT13(t *testing.T) {
	for _, c := range installCases() {
		t.Run(c.manager+"/new", func(t *testing.T) {
			f := newFakeManager(t, c.lastStep)
			code, out, errOut := runCLI("install", "--user", "--manager", c.manager, "--binary", "/usr/bin/schedd")
			if code != exitFailure || !strings.Contains(errOut, "nothing this install wrote or registered is left") {
				t.Fatalf("install = %d\n%s%s", code, out, errOut)
			}
			if tree := f.tree(t); len(tree) > 0 {
				t.Errorf("install left %q behind:\n%s", tree, out)
			}
			calls := f.calls(t)
			i := slices.IndexFunc(calls, func(s string) bool { return strings.Contains(s, c.lastStep) })
			if i < 0 || !slices.Equal(calls[i+1:], c.undoNew) {
				t.Errorf("calls %q: want %q after the failed step", calls, c.undoNew)
			}
		})
		t.Run(c.manager+"/replaced", func(t *testing.T) {
			f := newFakeManager(t, c.lastStep)
			paths := platform.DefaultServicePaths(c.manager, true, pathEnv())
			const oldFile, oldConfig = "the service file as it was\n", "gateway:\n  command: [my-gateway]\n"
			for p, content := range map[string]string{paths.File: oldFile, paths.Config: oldConfig} {
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := f.tree(t)
			code, out, errOut := runCLI("install", "--user", "--manager", c.manager, "--binary", "/usr/bin/schedd")
			if code != exitFailure || !strings.Contains(out, "wrote "+paths.File) || !strings.Contains(out, "put back the previous "+paths.File) {
				t.Fatalf("install = %d\n%s%s", code, out, errOut)
			}
			if b, _ := os.ReadFile(paths.File); string(b) != oldFile {
				t.Errorf("service file not put back: %q", b)
			}
			if b, _ := os.ReadFile(paths.Config); string(b) != oldConfig {
				t.Errorf("the config that was there changed: %q", b)
			}
			if after := f.tree(t); !slices.Equal(after, before) {
				t.Errorf("files %q, were %q", after, before)
			}
			calls := f.calls(t)
			i := slices.IndexFunc(calls, func(s string) bool { return strings.Contains(s, c.lastStep) })
			var want []string
			for _, st := range platform.InstallSteps(platform.ServiceSpec{Manager: c.manager, User: true}, paths.File, os.Getuid(), true, false) {
				want = append(want, strings.Join(st.Argv, " "))
			}
			if i < 0 || !slices.Equal(calls[i+1:], want) {
				t.Errorf("calls %q: want %q after the failed step", calls, want)
			}
		})
	}
	// With a manager that answers and does everything, the install stays.
	f := newFakeManager(t, "nothing fails")
	if code, out, errOut := runCLI("install", "--user", "--manager", platform.ManagerSystemd, "--binary", "/usr/bin/schedd"); code != 0 {
		t.Fatalf("install = %d\n%s%s", code, out, errOut)
	}
	paths := platform.DefaultServicePaths(platform.ManagerSystemd, true, pathEnv())
	for _, p := range []string{paths.File, paths.Config} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	if calls := f.calls(t); len(calls) != 4 || !strings.Contains(calls[3], "restart") {
		t.Errorf("calls %q", calls)
	}
}

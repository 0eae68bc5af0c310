package handoff

import "testing"

// TestChoose: the mode table for every platform and service manager; SCHEDD_NO_RESPAWN
// wins over everything, and no successor is ever spawned under a service manager (it
// would race the manager's own restart of schedd).
func TestChoose(t *testing.T) {
	tests := []struct {
		name   string
		in     Input
		mode   Mode
		action Action
	}{
		{"systemd", Input{GOOS: "linux", Manager: "systemd"}, Supervised, ExitForManager},
		{"launchd", Input{GOOS: "darwin", Manager: "launchd"}, Supervised, ExitForManager},
		{"schtasks", Input{GOOS: "windows", Manager: "schtasks", TaskName: "schedd"}, Supervised, RunTaskHelper},
		{"linux without a manager", Input{GOOS: "linux", Manager: "none"}, Spawned, SpawnSuccessor},
		{"darwin without a manager", Input{GOOS: "darwin", Manager: "none"}, Spawned, SpawnSuccessor},
		{"freebsd, manager unset", Input{GOOS: "freebsd"}, Spawned, SpawnSuccessor},
		{"windows without a task", Input{GOOS: "windows", Manager: "none"}, Disabled, KeepRunning},
		{"SCHEDD_NO_RESPAWN=1 beats systemd", Input{GOOS: "linux", Manager: "systemd", NoRespawn: "1"}, Disabled, KeepRunning},
		{"SCHEDD_NO_RESPAWN=TRUE beats schtasks", Input{GOOS: "windows", Manager: "schtasks", NoRespawn: "TRUE"}, Disabled, KeepRunning},
		{"SCHEDD_NO_RESPAWN= yes  beats spawning", Input{GOOS: "linux", Manager: "none", NoRespawn: " yes "}, Disabled, KeepRunning},
		{"SCHEDD_NO_RESPAWN=on", Input{GOOS: "darwin", Manager: "launchd", NoRespawn: "On"}, Disabled, KeepRunning},
		{"SCHEDD_NO_RESPAWN=0 does not disable", Input{GOOS: "linux", Manager: "none", NoRespawn: "0"}, Spawned, SpawnSuccessor},
		{"SCHEDD_NO_RESPAWN=false does not disable", Input{GOOS: "linux", Manager: "systemd", NoRespawn: "false"}, Supervised, ExitForManager},
		{"unknown manager fails", Input{GOOS: "linux", Manager: "upstart"}, Failed, KeepRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Choose(tt.in)
			if p.Mode != tt.mode || p.Action != tt.action || p.Detail == "" {
				t.Fatalf("got %+v, want mode %s action %d with a detail", p, tt.mode, tt.action)
			}
			if tt.in.Manager != "none" && tt.in.Manager != "" && p.Action == SpawnSuccessor {
				t.Fatal("spawned a successor under a service manager")
			}
		})
	}
}

func TestTruthy(t *testing.T) {
	for _, v := range []string{"1", "true", "TRUE", "yes", "Yes", "on", " on "} {
		if !Truthy(v) {
			t.Errorf("Truthy(%q) = false", v)
		}
	}
	for _, v := range []string{"", "0", "false", "no", "off", "2", "y"} {
		if Truthy(v) {
			t.Errorf("Truthy(%q) = true", v)
		}
	}
}

package supervisor

import "testing"

// TestPlanSelfRespawn: the mode table of UPSTREAM §3.7 for every platform and service
// manager; SCHEDD_NO_RESPAWN wins over everything, and no successor is ever spawned
// under a service manager (RELIABILITY lesson 5).
func TestPlanSelfRespawn(t *testing.T) {
	tests := []struct {
		name   string
		in     SelfInput
		mode   SelfMode
		action SelfAction
	}{
		{"systemd", SelfInput{GOOS: "linux", Manager: "systemd"}, SelfSupervised, SelfExitForManager},
		{"launchd", SelfInput{GOOS: "darwin", Manager: "launchd"}, SelfSupervised, SelfExitForManager},
		{"schtasks", SelfInput{GOOS: "windows", Manager: "schtasks", TaskName: "schedd"}, SelfSupervised, SelfRunTaskHelper},
		{"linux without a manager", SelfInput{GOOS: "linux", Manager: "none"}, SelfSpawned, SelfSpawnSuccessor},
		{"darwin without a manager", SelfInput{GOOS: "darwin", Manager: "none"}, SelfSpawned, SelfSpawnSuccessor},
		{"freebsd, manager unset", SelfInput{GOOS: "freebsd"}, SelfSpawned, SelfSpawnSuccessor},
		{"windows without a task", SelfInput{GOOS: "windows", Manager: "none"}, SelfDisabled, SelfKeepRunning},
		{"SCHEDD_NO_RESPAWN=1 beats systemd", SelfInput{GOOS: "linux", Manager: "systemd", NoRespawn: "1"}, SelfDisabled, SelfKeepRunning},
		{"SCHEDD_NO_RESPAWN=TRUE beats schtasks", SelfInput{GOOS: "windows", Manager: "schtasks", NoRespawn: "TRUE"}, SelfDisabled, SelfKeepRunning},
		{"SCHEDD_NO_RESPAWN= yes  beats spawning", SelfInput{GOOS: "linux", Manager: "none", NoRespawn: " yes "}, SelfDisabled, SelfKeepRunning},
		{"SCHEDD_NO_RESPAWN=on", SelfInput{GOOS: "darwin", Manager: "launchd", NoRespawn: "On"}, SelfDisabled, SelfKeepRunning},
		{"SCHEDD_NO_RESPAWN=0 does not disable", SelfInput{GOOS: "linux", Manager: "none", NoRespawn: "0"}, SelfSpawned, SelfSpawnSuccessor},
		{"SCHEDD_NO_RESPAWN=false does not disable", SelfInput{GOOS: "linux", Manager: "systemd", NoRespawn: "false"}, SelfSupervised, SelfExitForManager},
		{"unknown manager fails", SelfInput{GOOS: "linux", Manager: "upstart"}, SelfFailed, SelfKeepRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanSelfRespawn(tt.in)
			if p.Mode != tt.mode || p.Action != tt.action || p.Detail == "" {
				t.Fatalf("got %+v, want mode %s action %d with a detail", p, tt.mode, tt.action)
			}
			if tt.in.Manager != "none" && tt.in.Manager != "" && p.Action == SelfSpawnSuccessor {
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

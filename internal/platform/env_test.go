package platform

import (
	"slices"
	"strings"
	"testing"
)

// scrubbedSamples turns ScrubbedKeys into concrete names (the prefix entry becomes one).
func scrubbedSamples() []string {
	var keys []string
	for _, k := range ScrubbedKeys() {
		if prefix, ok := strings.CutSuffix(k, "*"); ok {
			keys = append(keys, prefix+"TASK_NAME", prefix+"X")
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

func TestChildEnvScrubsEveryKey(t *testing.T) {
	var parent []string
	for _, k := range scrubbedSamples() {
		parent = append(parent, k+"=from-parent")
	}
	parent = append(parent, "HOME=/home/x", "PATH=/bin", "SCHEDD_OTHER=1", "NOTIFY_SOCKETX=keep")
	got := ChildEnv(parent, nil)
	want := []string{"HOME=/home/x", "PATH=/bin", "SCHEDD_OTHER=1", "NOTIFY_SOCKETX=keep"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv = %q, want %q", got, want)
	}
}

// OpenClaw reads these to decide which service manager it runs under: from schedd's own
// environment (schedd installed as an OpenClaw-named unit, say) they never reach the
// gateway, and gateway.env may still set them on purpose.
func TestChildEnvScrubsOpenClawMarkers(t *testing.T) {
	markers := []string{"INVOCATION_ID", "SYSTEMD_EXEC_PID", "JOURNAL_STREAM", "OPENCLAW_SYSTEMD_UNIT",
		"OPENCLAW_LAUNCHD_LABEL", "LAUNCH_JOB_LABEL", "LAUNCH_JOB_NAME", "XPC_SERVICE_NAME",
		"OPENCLAW_WINDOWS_TASK_NAME", "OPENCLAW_SERVICE_MARKER", "OPENCLAW_SERVICE_KIND"}
	var parent []string
	for _, k := range markers {
		parent = append(parent, k+"=from-schedd")
	}
	parent = append(parent, "OPENCLAW_NO_RESPAWN=1")
	if got := ChildEnv(parent, nil); !slices.Equal(got, []string{"OPENCLAW_NO_RESPAWN=1"}) {
		t.Errorf("ChildEnv = %q, want only OPENCLAW_NO_RESPAWN", got)
	}
	got := ChildEnv(parent, map[string]string{"OPENCLAW_SERVICE_KIND": "schedd"})
	if !slices.Contains(got, "OPENCLAW_SERVICE_KIND=schedd") {
		t.Errorf("an explicit gateway.env value was dropped: %q", got)
	}
}

func TestChildEnvSet(t *testing.T) {
	parent := []string{"A=1", "B=2", "NOTIFY_SOCKET=/run/systemd/notify", "A=3", "junk", "=C:=C:\\x"}
	got := ChildEnv(parent, map[string]string{
		"B":             "override",
		"NOTIFY_SOCKET": "/run/schedd/notify.sock", // ours: kept although scrubbed from the parent
		"Z":             "new",
		"C":             "",
	})
	want := []string{"A=3", "B=override", "=C:=C:\\x", "C=", "NOTIFY_SOCKET=/run/schedd/notify.sock", "Z=new"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv = %q, want %q", got, want)
	}
}

func TestChildEnvNilParent(t *testing.T) {
	if got := ChildEnv(nil, nil); len(got) != 0 {
		t.Errorf("ChildEnv(nil, nil) = %q", got)
	}
}

func TestScrubbedKeysIsACopy(t *testing.T) {
	k := ScrubbedKeys()
	k[0] = "changed"
	if ScrubbedKeys()[0] == "changed" {
		t.Error("ScrubbedKeys shares its slice")
	}
}

func FuzzChildEnv(f *testing.F) {
	f.Add("A=1", "NOTIFY_SOCKET=x", "B", "2")
	f.Add("=C:=x", "SCHEDD_SCHTASKS_A=1", "", "")
	f.Fuzz(func(t *testing.T, e1, e2, k, v string) {
		got := ChildEnv([]string{e1, e2}, map[string]string{k: v})
		seen := map[string]bool{}
		for _, kv := range got {
			key, ok := envKey(kv)
			if !ok {
				t.Fatalf("entry without key: %q", kv)
			}
			if seen[normKey(key)] {
				t.Fatalf("duplicate key %q in %q", key, got)
			}
			seen[normKey(key)] = true
			if scrubbed(key) && normKey(key) != normKey(k) {
				t.Fatalf("scrubbed key %q kept in %q", key, got)
			}
		}
	})
}

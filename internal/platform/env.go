package platform

import (
	"runtime"
	"slices"
	"strings"
)

// scrubbedKeys are the service-manager variables a parent may carry that must never reach
// the child: the child gets schedd's own NOTIFY_SOCKET, never our manager's.
var scrubbedKeys = []string{
	"NOTIFY_SOCKET",
	"WATCHDOG_USEC",
	"WATCHDOG_PID",
	"LISTEN_FDS",
	"LISTEN_PID",
	"LISTEN_FDNAMES",
	"INVOCATION_ID",
	"SYSTEMD_EXEC_PID",
	"JOURNAL_STREAM",
	"MANAGERPID",
	"MAINPID",
	"LAUNCH_JOB_LABEL",
	"LAUNCH_JOB_NAME",
	"XPC_SERVICE_NAME",
	"SCHEDD_SERVICE_MANAGER",
	// OpenClaw's own service markers: a gateway that sees them believes it runs under the
	// manager they name and defers to it (or repairs its unit) instead of to schedd.
	"OPENCLAW_SYSTEMD_UNIT",
	"OPENCLAW_LAUNCHD_LABEL",
	"OPENCLAW_WINDOWS_TASK_NAME",
	"OPENCLAW_SERVICE_MARKER",
	"OPENCLAW_SERVICE_KIND",
}

// scrubbedPrefix marks the schtasks markers; every variable starting with it is dropped.
const scrubbedPrefix = "SCHEDD_SCHTASKS_"

// ScrubbedKeys reports the names ChildEnv removes from the parent environment. The entry
// "SCHEDD_SCHTASKS_*" stands for every name with that prefix.
func ScrubbedKeys() []string {
	return append(slices.Clone(scrubbedKeys), scrubbedPrefix+"*")
}

// ChildEnv builds a child environment from parent (os.Environ() form): it drops the
// parent's service-manager variables (see ScrubbedKeys), then applies set, which overrides
// the parent. A key set explicitly is kept even if it is a scrubbed name: schedd passes its
// own NOTIFY_SOCKET that way. When the parent holds a key twice the later one wins.
// Entries without '=' are dropped. Parent order is kept; keys only in set follow, sorted.
// On Windows keys compare case-insensitively.
func ChildEnv(parent []string, set map[string]string) []string {
	out := make([]string, 0, len(parent)+len(set))
	index := make(map[string]int, len(parent)+len(set)) // normalized key -> position in out
	put := func(key, kv string) {
		norm := normKey(key)
		if i, ok := index[norm]; ok {
			out[i] = kv
			return
		}
		index[norm] = len(out)
		out = append(out, kv)
	}
	for _, kv := range parent {
		key, ok := envKey(kv)
		if !ok || scrubbed(key) {
			continue
		}
		put(key, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsRune(k, '=') {
			continue
		}
		put(k, k+"="+set[k])
	}
	return out
}

// WithoutKeys returns env (os.Environ() form) without the variables named in keys (on
// Windows compared case-insensitively); env itself is not changed.
func WithoutKeys(env []string, keys []string) []string {
	if len(keys) == 0 {
		return env
	}
	drop := make(map[string]bool, len(keys))
	for _, k := range keys {
		drop[normKey(k)] = true
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if key, ok := envKey(kv); ok && drop[normKey(key)] {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// envKey splits the key off "KEY=VALUE". A leading '=' belongs to the key (Windows keeps
// per-drive directories as "=C:=C:\dir").
func envKey(kv string) (string, bool) {
	if kv == "" {
		return "", false
	}
	i := strings.IndexByte(kv[1:], '=')
	if i < 0 {
		return "", false
	}
	return kv[:i+1], true
}

func scrubbed(key string) bool {
	norm := normKey(key)
	if strings.HasPrefix(norm, scrubbedPrefix) {
		return true
	}
	return slices.Contains(scrubbedKeys, norm)
}

func normKey(key string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(key)
	}
	return key
}

// envOrDefault returns env, or the scrubbed environment of this process when env is nil.
func envOrDefault(env []string, environ func() []string) []string {
	if env != nil {
		return env
	}
	return ChildEnv(environ(), nil)
}

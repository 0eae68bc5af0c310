package platform

import "strings"

// DetectServiceManager guesses, from environment hints, which service manager started
// schedd: "systemd", "launchd", "schtasks" or "none". It is a fallback for when
// --service-manager is not given: hints leak into child shells, so the installed service
// files pass the flag explicitly.
func DetectServiceManager(environ []string) string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = strings.TrimSpace(v)
		}
	}
	if v := env["SCHEDD_SERVICE_MANAGER"]; v == "systemd" || v == "launchd" || v == "schtasks" {
		return v
	}
	return detectServiceManager(env)
}

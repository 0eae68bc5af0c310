//go:build !linux

package platform

// detectServiceManager reads the hints of launchd and the Windows task scheduler.
func detectServiceManager(env map[string]string) string {
	if l := env["LAUNCH_JOB_LABEL"]; l != "" && l != "0" {
		return "launchd"
	}
	if l := env["XPC_SERVICE_NAME"]; l != "" && l != "0" {
		return "launchd"
	}
	if env["SCHEDD_SCHTASKS_TASK"] != "" {
		return "schtasks"
	}
	return "none"
}

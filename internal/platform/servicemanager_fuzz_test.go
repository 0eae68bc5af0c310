package platform

import (
	"slices"
	"strings"
	"testing"
)

// FuzzResolveServiceManager: any environment gives a known manager with a reason, an
// explicit flag always wins (R-INIT-10), and a hint never counts on another platform.
func FuzzResolveServiceManager(f *testing.F) {
	f.Add("linux", "INVOCATION_ID=abc\nJOURNAL_STREAM=8:1", 1, "systemd")
	f.Add("darwin", "XPC_SERVICE_NAME=0", 1, "")
	f.Add("windows", "SCHEDD_SCHTASKS_TASK=x\nSCHEDD_SERVICE_MANAGER=launchd", 600, "")
	f.Add("linux", "SYSTEMD_EXEC_PID=42\n=x\nNOEQ", 7, "bash")
	f.Fuzz(func(t *testing.T, goos, env string, ppid int, parent string) {
		h := ServiceHints{GOOS: goos, Environ: strings.Split(env, "\n"), PID: 42, PPID: ppid, ParentName: parent}
		known := []string{ManagerNone, ManagerSystemd, ManagerLaunchd, ManagerSchtasks}
		d, err := ResolveServiceManager("auto", h)
		if err != nil || !slices.Contains(known, d.Manager) || d.Source == "" {
			t.Fatalf("auto: %+v, %v", d, err)
		}
		if d.Source != "SCHEDD_SERVICE_MANAGER" && d.Manager != ManagerNone {
			want := map[string]string{ManagerSystemd: "linux", ManagerLaunchd: "darwin", ManagerSchtasks: "windows"}[d.Manager]
			if goos != want {
				t.Fatalf("%s detected on %s", d.Manager, goos)
			}
		}
		for _, flag := range known {
			if d, err := ResolveServiceManager(flag, h); err != nil || d.Manager != flag || d.Source != "flag" {
				t.Fatalf("flag %s: %+v, %v", flag, d, err)
			}
		}
	})
}

// splitWindows splits a command line the way CommandLineToArgvW does (the rules
// windowsQuote writes for).
func splitWindows(s string) []string {
	var args []string
	var cur strings.Builder
	inArg, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				cur.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					cur.WriteByte('"')
				} else {
					quoted = !quoted
				}
			} else {
				cur.WriteString(strings.Repeat(`\`, n))
				i--
			}
			inArg = true
		case c == '"':
			quoted = !quoted
			inArg = true
		case (c == ' ' || c == '\t') && !quoted:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// FuzzWindowsQuote: a task's Arguments split back into exactly the words schedd wrote.
func FuzzWindowsQuote(f *testing.F) {
	f.Add("run", `C:\Program Files\schedd\schedd.yaml`)
	f.Add(`say "hi"`, `C:\dir with space\`)
	f.Add("", `\\"\`)
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsAny(a+b, "\x00\n\r") {
			return
		}
		words := []string{a, b}
		line := windowsQuote(a) + " " + windowsQuote(b)
		if got := splitWindows(line); !slices.Equal(got, words) {
			t.Fatalf("%q -> %s -> %q", words, line, got)
		}
	})
}

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/schedd/schedd/internal/handoff"
	"github.com/schedd/schedd/internal/platform"
)

var update = flag.Bool("update", false, "rewrite the committed service files (go test ./cmd/schedd -run Golden -update)")

// goldenFile is one committed service file and the install flags that render it: the
// defaults of a package install.
type goldenFile struct {
	manager string
	path    string // from the repository root
	args    []string
}

var goldenFiles = []goldenFile{
	{platform.ManagerSystemd, "systemd/schedd.service", []string{"--binary", "/usr/bin/schedd"}},
	{platform.ManagerLaunchd, "launchd/" + platform.LaunchdLabel + ".plist", []string{"--binary", "/usr/local/bin/schedd"}},
	{platform.ManagerSchtasks, "packaging/windows/schedd.xml", []string{"--binary", `C:\Program Files\schedd\schedd.exe`, "--config", `C:\ProgramData\schedd\schedd.yaml`}},
}

// renderPrint runs `schedd install --print` against an empty root (no config file on this
// machine can change the output) and returns the file.
func renderPrint(t *testing.T, manager string, args ...string) []byte {
	t.Helper()
	argv := append([]string{"install", "--print", "--manager", manager, "--root", t.TempDir()}, args...)
	code, out, errOut := runCLI(argv...)
	if code != 0 {
		t.Fatalf("schedd %q = %d: %s", argv, code, errOut)
	}
	return []byte(out)
}

// TestGoldenServiceFiles is R-INIT-11's "generated files match golden files": the files
// committed under systemd/, launchd/ and packaging/windows/ are exactly what
// `schedd install --print` renders with the package defaults.
func TestGoldenServiceFiles(t *testing.T) {
	for _, g := range goldenFiles {
		t.Run(g.manager, func(t *testing.T) {
			got := renderPrint(t, g.manager, g.args...)
			path := filepath.Join("..", "..", filepath.FromSlash(g.path))
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (regenerate with: go test ./cmd/schedd -run Golden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from `schedd install --print` (regenerate with: go test ./cmd/schedd -run Golden -update):\n%s", g.path, got)
			}
		})
	}
}

// TestShippedFilesNameNoTestIDs: the files shipped to users (the service files as
// committed and as rendered for --user, the packaging scripts) explain themselves in
// words; the test IDs of docs/scenarios.md mean nothing to their readers.
func TestShippedFilesNameNoTestIDs(t *testing.T) {
	id := regexp.MustCompile(`\bR-[A-Z]+-[0-9]+\b`)
	files := map[string][]byte{}
	for _, dir := range []string{"systemd", "launchd", "packaging"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files[p], err = os.ReadFile(p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{platform.ManagerSystemd, platform.ManagerLaunchd, platform.ManagerSchtasks} {
		b, err := platform.RenderServiceFile(platform.ServiceSpec{Manager: m, User: true, Binary: "/b/schedd", Config: "/c.yaml", TaskUser: "u"})
		if err != nil {
			t.Fatal(err)
		}
		files[m+" --user"] = b
	}
	for name, b := range files {
		if ids := id.FindAll(b, -1); len(ids) > 0 {
			t.Errorf("%s names %q", name, ids)
		}
	}
}

func readGolden(t *testing.T, manager string) []byte {
	t.Helper()
	for _, g := range goldenFiles {
		if g.manager == manager {
			b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(g.path)))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no golden file for %s", manager)
	return nil
}

// exitPath is one way schedd ends, and whether its service manager should start it again.
type exitPath struct {
	name    string
	code    int    // exit code, when signal is ""
	signal  string // a fatal signal (a crash), else ""
	restart bool
}

// exitPaths are schedd's exits (root.go) and the intended outcome under a service manager
// (R-INIT-01): a clean stop stays down, a self-restart (75) and a crash come back, and
// what a restart cannot fix stays down.
var exitPaths = []exitPath{
	{"clean stop", exitOK, "", false},
	{"runtime failure", exitFailure, "", true},
	{"usage error", exitUsage, "", false},
	{"state dir held by another schedd", exitLocked, "", false},
	{"damaged store", exitStore, "", false},
	{"self-restart", exitRespawn, "", true},
	{"config error", exitConfig, "", false},
	{"crash (SIGSEGV)", 0, "SIGSEGV", true},
	{"killed (SIGKILL)", 0, "SIGKILL", true},
}

// unitSettings parses the [Service] section of a unit: key -> values, in order.
func unitSettings(t *testing.T, unit []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("bad unit line %q", line)
			}
			out[k] = append(out[k], v)
		}
	}
	return out
}

// systemdRestarts is systemd's decision for Restart=on-failure (systemd.service(5)):
// restart on a non-zero exit not listed in RestartPreventExitStatus=, and on death by a
// signal other than the clean ones (HUP, INT, TERM, PIPE).
func systemdRestarts(t *testing.T, s map[string][]string, p exitPath) bool {
	t.Helper()
	if got := s["Restart"]; !slices.Equal(got, []string{"on-failure"}) {
		t.Fatalf("Restart=%q, want on-failure", got)
	}
	if len(s["SuccessExitStatus"]) > 0 || len(s["RestartForceExitStatus"]) > 0 {
		t.Fatalf("the contract below does not model SuccessExitStatus/RestartForceExitStatus")
	}
	prevent := map[string]bool{}
	for _, v := range s["RestartPreventExitStatus"] {
		for _, f := range strings.Fields(v) {
			prevent[f] = true
		}
	}
	if p.signal != "" {
		return !slices.Contains([]string{"SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"}, p.signal) && !prevent[p.signal]
	}
	return p.code != 0 && !prevent[strconv.Itoa(p.code)]
}

// plistValue is a parsed property-list value.
type plistValue struct {
	kind  string // dict, array, string, integer, true, false
	text  string
	dict  map[string]plistValue
	array []plistValue
}

func parsePlist(t *testing.T, b []byte) plistValue {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var parse func(start xml.StartElement) plistValue
	parse = func(start xml.StartElement) plistValue {
		v := plistValue{kind: start.Name.Local}
		var key string
		for {
			tok, err := d.Token()
			if err != nil {
				t.Fatalf("plist: %v", err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if tok.Name.Local == "key" {
					var k string
					if err := d.DecodeElement(&k, &tok); err != nil {
						t.Fatal(err)
					}
					key = k
					continue
				}
				child := parse(tok)
				switch v.kind {
				case "dict":
					if v.dict == nil {
						v.dict = map[string]plistValue{}
					}
					v.dict[key] = child
				default:
					v.array = append(v.array, child)
				}
			case xml.CharData:
				v.text += string(tok)
			case xml.EndElement:
				v.text = strings.TrimSpace(v.text)
				return v
			}
		}
	}
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("plist: no <plist>: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "plist" {
			root := parse(se)
			if len(root.array) != 1 || root.array[0].kind != "dict" {
				t.Fatalf("plist does not hold one dict")
			}
			return root.array[0]
		}
	}
}

// launchdRestarts is launchd's decision for KeepAlive (launchd.plist(5)): with
// SuccessfulExit=false the job is started again after any exit that is not a clean 0,
// signals included; launchd has no way to exempt codes.
func launchdRestarts(t *testing.T, job plistValue, p exitPath) bool {
	t.Helper()
	ka, ok := job.dict["KeepAlive"]
	if !ok || ka.kind != "dict" {
		t.Fatalf("KeepAlive is not a dict: %+v", ka)
	}
	se, ok := ka.dict["SuccessfulExit"]
	if !ok || se.kind != "false" || len(ka.dict) != 1 {
		t.Fatalf("KeepAlive must be exactly {SuccessfulExit: false}: %+v", ka.dict)
	}
	return p.signal != "" || p.code != 0
}

// taskFile is the part of the task XML the contract reads.
type taskFile struct {
	XMLName  xml.Name `xml:"http://schemas.microsoft.com/windows/2004/02/mit/task Task"`
	Triggers struct {
		Boot  *struct{ Enabled bool } `xml:"BootTrigger"`
		Logon *struct{ Enabled bool } `xml:"LogonTrigger"`
	}
	Settings struct {
		MultipleInstancesPolicy string
		ExecutionTimeLimit      string
		RestartOnFailure        *struct {
			Interval string
			Count    int
		}
	}
	Actions struct {
		Exec []struct {
			Command   string
			Arguments string
		}
	}
}

// TestExitCodeContract is R-INIT-01 against each generated file: for every way schedd
// exits, the unit, plist and task start it again exactly when intended; and the file runs
// schedd with --service-manager naming its manager, for which a self-restart is the
// supervised exit 75 (or the task helper), never a detached successor.
func TestExitCodeContract(t *testing.T) {
	t.Run("systemd", func(t *testing.T) {
		unit := readGolden(t, platform.ManagerSystemd)
		s := unitSettings(t, unit)
		for _, p := range exitPaths {
			if got := systemdRestarts(t, s, p); got != p.restart {
				t.Errorf("%s (exit %d %s): systemd restarts = %v, want %v", p.name, p.code, p.signal, got, p.restart)
			}
		}
		checkRunArgs(t, platform.ManagerSystemd, strings.Fields(s["ExecStart"][0]))
		stopBudget(t, s["TimeoutStopSec"][0])
		for k, want := range map[string]string{"Type": "notify", "NotifyAccess": "main", "KillMode": "mixed", "ExecReload": "/bin/kill -HUP $MAINPID",
			"StateDirectory": "schedd", "RuntimeDirectory": "schedd", "WatchdogSec": "30s"} {
			if got := s[k]; !slices.Equal(got, []string{want}) {
				t.Errorf("%s=%q, want %s", k, got, want)
			}
		}
		if pre := s["ExecStartPre"]; len(pre) != 1 || !strings.HasSuffix(pre[0], " config validate /etc/schedd/schedd.yaml") {
			t.Errorf("ExecStartPre=%q: want the config validation", pre)
		}
		if got := s["PrivateTmp"]; len(got) > 0 {
			t.Errorf("PrivateTmp=%q: the gateway's /tmp must be the host's", got)
		}
	})
	t.Run("launchd", func(t *testing.T) {
		job := parsePlist(t, readGolden(t, platform.ManagerLaunchd))
		intended := map[int]bool{exitUsage: true, exitLocked: true, exitConfig: true} // throttled retries: launchd cannot exempt codes
		for _, p := range exitPaths {
			want := p.restart || (p.signal == "" && intended[p.code])
			if got := launchdRestarts(t, job, p); got != want {
				t.Errorf("%s (exit %d %s): launchd restarts = %v, want %v", p.name, p.code, p.signal, got, want)
			}
		}
		if job.dict["RunAtLoad"].kind != "true" || job.dict["Label"].text != platform.LaunchdLabel {
			t.Errorf("RunAtLoad/Label: %+v %+v", job.dict["RunAtLoad"], job.dict["Label"])
		}
		if th, _ := strconv.Atoi(job.dict["ThrottleInterval"].text); th < 10 {
			t.Errorf("ThrottleInterval %d: keep launchd's floor of 10s at least", th)
		}
		stopBudget(t, job.dict["ExitTimeOut"].text+"s")
		var args []string
		for _, a := range job.dict["ProgramArguments"].array {
			args = append(args, a.text)
		}
		checkRunArgs(t, platform.ManagerLaunchd, args)
		if job.dict["StandardErrorPath"].text == "" || job.dict["StandardOutPath"].text == "" {
			t.Error("no log paths")
		}
	})
	t.Run("schtasks", func(t *testing.T) {
		var task taskFile
		if err := xml.Unmarshal(readGolden(t, platform.ManagerSchtasks), &task); err != nil {
			t.Fatal(err)
		}
		s := task.Settings
		if s.ExecutionTimeLimit != "PT0S" {
			t.Errorf("ExecutionTimeLimit %q, want PT0S (R-INIT-09)", s.ExecutionTimeLimit)
		}
		if s.MultipleInstancesPolicy != "IgnoreNew" {
			t.Errorf("MultipleInstancesPolicy %q, want IgnoreNew", s.MultipleInstancesPolicy)
		}
		if r := s.RestartOnFailure; r == nil || r.Count < 1 || r.Interval == "" {
			t.Errorf("RestartOnFailure %+v: a crash must come back", r)
		}
		if task.Triggers.Boot == nil || !task.Triggers.Boot.Enabled {
			t.Error("no enabled boot trigger")
		}
		if len(task.Actions.Exec) != 1 {
			t.Fatalf("actions %+v", task.Actions.Exec)
		}
		checkRunArgs(t, platform.ManagerSchtasks, append([]string{task.Actions.Exec[0].Command}, strings.Fields(task.Actions.Exec[0].Arguments)...))
	})
}

// checkRunArgs: the service runs `schedd run --service-manager M --config F`, detection
// with that flag gives M whatever the environment says, and a self-restart under M is
// supervised: exit 75 (which the file restarts), or the task helper for schtasks.
func checkRunArgs(t *testing.T, manager string, argv []string) {
	t.Helper()
	i := slices.Index(argv, "--service-manager")
	if len(argv) < 2 || argv[1] != "run" || i < 0 || i+1 >= len(argv) || argv[i+1] != manager || !slices.Contains(argv, "--config") {
		t.Fatalf("command line %q: want run --service-manager %s --config FILE", argv, manager)
	}
	d, err := platform.ResolveServiceManager(argv[i+1], platform.ServiceHints{GOOS: "linux", PID: 9, PPID: 1, ParentName: "systemd",
		Environ: []string{"INVOCATION_ID=x", "XPC_SERVICE_NAME=0", "SCHEDD_SCHTASKS_TASK=t"}})
	if err != nil || d.Manager != manager {
		t.Fatalf("detection with the file's flag: %+v, %v", d, err)
	}
	goos := map[string]string{platform.ManagerSystemd: "linux", platform.ManagerLaunchd: "darwin", platform.ManagerSchtasks: "windows"}[manager]
	plan := handoff.Choose(handoff.Input{GOOS: goos, Manager: d.Manager, TaskName: d.TaskName})
	want := handoff.ExitForManager
	if manager == platform.ManagerSchtasks {
		want = handoff.RunTaskHelper
	}
	if plan.Mode != handoff.Supervised || plan.Action != want {
		t.Fatalf("self-restart under %s: %+v", manager, plan)
	}
}

// stopBudget: the manager's stop timeout exceeds gateway.stop.timeout (30s by default)
// plus the margin (R-INIT-03).
func stopBudget(t *testing.T, v string) {
	t.Helper()
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("stop budget %q: %v", v, err)
	}
	if d < 30*time.Second+platform.StopMargin {
		t.Errorf("stop budget %v, want at least gateway.stop.timeout + %v", d, platform.StopMargin)
	}
}

// TestTaskXMLSchema is R-INIT-09's "validate the task XML": every element of the task is
// one the Task Scheduler schema (version 1.4) has at that place, in its namespace, and
// the elements schedd relies on are there.
func TestTaskXMLSchema(t *testing.T) {
	const ns = "http://schemas.microsoft.com/windows/2004/02/mit/task"
	allowed := map[string]bool{}
	for _, p := range []string{
		"Task", "Task/RegistrationInfo", "Task/RegistrationInfo/Description", "Task/RegistrationInfo/URI",
		"Task/Triggers", "Task/Triggers/BootTrigger", "Task/Triggers/BootTrigger/Enabled",
		"Task/Triggers/LogonTrigger", "Task/Triggers/LogonTrigger/Enabled", "Task/Triggers/LogonTrigger/UserId",
		"Task/Principals", "Task/Principals/Principal", "Task/Principals/Principal/UserId",
		"Task/Principals/Principal/LogonType", "Task/Principals/Principal/RunLevel",
		"Task/Settings", "Task/Settings/MultipleInstancesPolicy", "Task/Settings/DisallowStartIfOnBatteries",
		"Task/Settings/StopIfGoingOnBatteries", "Task/Settings/AllowHardTerminate", "Task/Settings/StartWhenAvailable",
		"Task/Settings/RunOnlyIfNetworkAvailable", "Task/Settings/IdleSettings", "Task/Settings/IdleSettings/StopOnIdleEnd",
		"Task/Settings/IdleSettings/RestartOnIdle", "Task/Settings/AllowStartOnDemand", "Task/Settings/Enabled",
		"Task/Settings/Hidden", "Task/Settings/RunOnlyIfIdle", "Task/Settings/WakeToRun", "Task/Settings/ExecutionTimeLimit",
		"Task/Settings/Priority", "Task/Settings/RestartOnFailure", "Task/Settings/RestartOnFailure/Interval",
		"Task/Settings/RestartOnFailure/Count", "Task/Actions", "Task/Actions/Exec", "Task/Actions/Exec/Command",
		"Task/Actions/Exec/Arguments", "Task/Actions/Exec/WorkingDirectory",
	} {
		allowed[p] = true
	}
	required := []string{"Task/Settings/ExecutionTimeLimit", "Task/Settings/RestartOnFailure/Interval",
		"Task/Settings/RestartOnFailure/Count", "Task/Settings/MultipleInstancesPolicy", "Task/Actions/Exec/Command",
		"Task/Principals/Principal/UserId", "Task/RegistrationInfo/URI"}
	files := map[string][]byte{"golden": readGolden(t, platform.ManagerSchtasks)}
	user, err := platform.RenderServiceFile(platform.ServiceSpec{Manager: platform.ManagerSchtasks, User: true, Binary: `C:\s.exe`, TaskUser: `HOST\u`})
	if err != nil {
		t.Fatal(err)
	}
	files["user"] = user
	for name, b := range files {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			var stack []string
			d := xml.NewDecoder(bytes.NewReader(b))
			for {
				tok, err := d.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					stack = append(stack, tok.Name.Local)
					p := strings.Join(stack, "/")
					if tok.Name.Space != ns {
						t.Errorf("%s in namespace %q", p, tok.Name.Space)
					}
					if !allowed[p] {
						t.Errorf("%s is not in the task schema", p)
					}
					seen[p] = true
				case xml.EndElement:
					stack = stack[:len(stack)-1]
				}
			}
			for _, r := range required {
				if !seen[r] {
					t.Errorf("%s missing", r)
				}
			}
			var task taskFile
			if err := xml.Unmarshal(b, &task); err != nil {
				t.Fatal(err)
			}
			if (task.Triggers.Boot != nil) == (task.Triggers.Logon != nil) {
				t.Error("want exactly one of a boot or a logon trigger")
			}
		})
	}
}

// decodeUTF16 reads what install writes for schtasks.
func decodeUTF16(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xfe || len(b)%2 != 0 {
		t.Fatalf("not UTF-16LE with a BOM")
	}
	u := make([]uint16, 0, len(b)/2-1)
	for i := 2; i < len(b); i += 2 {
		u = append(u, binary.LittleEndian.Uint16(b[i:]))
	}
	s := strings.ReplaceAll(string(utf16.Decode(u)), "\r\n", "\n")
	return []byte(strings.Replace(s, `encoding="UTF-16"`, `encoding="UTF-8"`, 1))
}

// TestInstallIdempotent is R-INIT-11 in a temp root: installing writes the service file
// and a default config; installing again changes nothing; a changed config stop timeout
// rewrites the file, never the config; uninstalling twice removes the file once and
// keeps the config.
func TestInstallIdempotent(t *testing.T) {
	for _, g := range goldenFiles {
		t.Run(g.manager, func(t *testing.T) {
			root := t.TempDir()
			args := append([]string{"--manager", g.manager, "--root", root}, g.args...)
			paths := platform.DefaultServicePaths(g.manager, false, pathEnv())
			cfgPath := paths.Config
			if i := slices.Index(g.args, "--config"); i >= 0 {
				cfgPath = g.args[i+1]
			}
			file := filepath.Join(root, paths.File)
			cfgFile := filepath.Join(root, cfgPath)

			code, out, errOut := runCLI(append([]string{"install"}, args...)...)
			if code != 0 || !strings.Contains(out, "wrote "+file) || !strings.Contains(out, "wrote "+cfgFile) || !strings.Contains(out, "--root") {
				t.Fatalf("first install = %d:\n%s%s", code, out, errOut)
			}
			installed, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if g.manager == platform.ManagerSchtasks {
				installed = decodeUTF16(t, installed)
			}
			if want := readGolden(t, g.manager); !bytes.Equal(installed, want) {
				t.Fatalf("installed file differs from %s:\n%s", g.path, installed)
			}
			cfg, err := os.ReadFile(cfgFile)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(file)
			code, out, _ = runCLI(append([]string{"install"}, args...)...)
			if code != 0 || !strings.Contains(out, "up to date") || strings.Contains(out, "wrote") {
				t.Fatalf("second install = %d:\n%s", code, out)
			}
			if after, _ := os.ReadFile(file); !bytes.Equal(after, before) {
				t.Fatal("second install changed the file")
			}

			edited := strings.Replace(string(cfg), "    timeout: 30s           # then SIGKILL", "    timeout: 2m            # then SIGKILL", 1)
			if edited == string(cfg) {
				t.Fatal("the example config has no stop timeout line to edit")
			}
			if err := os.WriteFile(cfgFile, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			// The task has no stop budget of its own: its file stays as it is.
			wantOut := "wrote " + file
			if g.manager == platform.ManagerSchtasks {
				wantOut = "up to date"
			}
			code, out, _ = runCLI(append([]string{"install"}, args...)...)
			if code != 0 || !strings.Contains(out, wantOut) || strings.Contains(out, "wrote "+cfgFile) {
				t.Fatalf("install after a config change = %d:\n%s", code, out)
			}
			if b, _ := os.ReadFile(cfgFile); string(b) != edited {
				t.Fatal("install rewrote an existing config")
			}
			b, _ := os.ReadFile(file)
			if g.manager == platform.ManagerSchtasks {
				b = decodeUTF16(t, b)
			}
			if g.manager != platform.ManagerSchtasks && !strings.Contains(string(b), "135") {
				t.Fatalf("stop budget not 2m + 15s = 135s:\n%s", b)
			}

			uargs := []string{"uninstall", "--manager", g.manager, "--root", root}
			if code, out, _ = runCLI(uargs...); code != 0 || !strings.Contains(out, "removed "+file) {
				t.Fatalf("uninstall = %d:\n%s", code, out)
			}
			if code, out, _ = runCLI(uargs...); code != 0 || !strings.Contains(out, "was not installed") {
				t.Fatalf("second uninstall = %d:\n%s", code, out)
			}
			if _, err := os.Stat(cfgFile); err != nil {
				t.Fatalf("uninstall removed the config: %v", err)
			}
		})
	}
}

// TestInstallRefusesBadConfig: a config that does not load is not installed (exit 78).
func TestInstallRefusesBadConfig(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "etc", "schedd", "schedd.yaml")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	if err := os.WriteFile(cfg, []byte("gateway:\n  stopp: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("install", "--manager", "systemd", "--root", root, "--binary", "/usr/bin/schedd", "--config", "/etc/schedd/schedd.yaml")
	if code != exitConfig || !strings.Contains(errOut, "stopp") {
		t.Fatalf("install with a bad config = %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "etc", "systemd", "system", "schedd.service")); err == nil {
		t.Fatal("a unit was written for a bad config")
	}
	if code, _, _ := runCLI("install", "--manager", "upstart", "--print"); code != exitUsage {
		t.Fatalf("unknown manager = %d, want %d", code, exitUsage)
	}
}

// runCLI runs schedd in process and returns its exit code and output.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestUnitStopBudgetForOpenClaw: the unit's TimeoutStopSec stays above gateway.stop.timeout,
// and OpenClaw, which plans its shutdown for min(325 s, TimeoutStopSec - 5 s) of the unit
// owning its cgroup, finishes before schedd's SIGKILL at the 330 s the example recommends.
func TestUnitStopBudgetForOpenClaw(t *testing.T) {
	const stop = 330 * time.Second
	unit, err := platform.RenderServiceFile(platform.ServiceSpec{Manager: platform.ManagerSystemd,
		Binary: "/usr/local/bin/schedd", Config: "/etc/schedd/schedd.yaml", StopTimeout: stop})
	if err != nil {
		t.Fatal(err)
	}
	v := unitSettings(t, unit)["TimeoutStopSec"]
	if len(v) != 1 {
		t.Fatalf("TimeoutStopSec=%q", v)
	}
	d, err := time.ParseDuration(v[0])
	if err != nil {
		t.Fatalf("TimeoutStopSec=%q: %v", v[0], err)
	}
	if d <= stop {
		t.Errorf("TimeoutStopSec=%v, not above gateway.stop.timeout %v", d, stop)
	}
	if plan := min(325*time.Second, d-5*time.Second); plan > stop {
		t.Errorf("OpenClaw would plan %v of shutdown, past schedd's stop timeout %v", plan, stop)
	}
}

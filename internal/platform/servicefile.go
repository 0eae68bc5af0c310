package platform

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
	"sync"
	"text/template"
	"time"
)

// Names of the installed service.
const (
	SystemdUnit  = "schedd.service"
	LaunchdLabel = "io.github.schedd"
)

// StopMargin is what the service manager's stop budget adds to gateway.stop.timeout:
// time for schedd's own shutdown after the gateway's group is gone (R-INIT-03).
const StopMargin = 15 * time.Second

// ServiceSpec is what a unit, plist or task file is rendered from.
type ServiceSpec struct {
	Manager string // ManagerSystemd, ManagerLaunchd or ManagerSchtasks
	User    bool   // a per-user service (systemd --user, a LaunchAgent, a logon task)
	Binary  string // absolute path of schedd
	Config  string // --config; "" = none (every setting has a default)
	// StopTimeout is gateway.stop.timeout; the stop budget is StopTimeout + StopMargin.
	StopTimeout time.Duration
	// LogPath is where launchd writes schedd's output (launchd only).
	LogPath string
	// TaskName and TaskUser name the scheduled task and, for a User task, the account
	// (DOMAIN\user) it runs as at logon (schtasks only).
	TaskName string
	TaskUser string
	// Socket, when set, is the socket of SocketUnit, which the service then requires
	// (systemd only).
	Socket *SocketSpec
}

// StopBudget is the service manager's stop timeout for a gateway stop timeout, in whole
// seconds, rounded up.
func StopBudget(stop time.Duration) time.Duration {
	return time.Duration(math.Ceil((stop + StopMargin).Seconds())) * time.Second
}

// RunArgs is the command line the service runs: `run --service-manager M [--config F]`.
func (s ServiceSpec) RunArgs() []string {
	args := []string{"run", "--service-manager", s.Manager}
	if s.Config != "" {
		args = append(args, "--config", s.Config)
	}
	return args
}

// RenderServiceFile renders the systemd unit, launchd plist or Windows task XML for s.
func RenderServiceFile(s ServiceSpec) ([]byte, error) {
	if s.Binary == "" {
		return nil, fmt.Errorf("render %s file: no binary path", s.Manager)
	}
	var tmpl *template.Template
	switch s.Manager {
	case ManagerSystemd:
		tmpl = systemdTmpl()
	case ManagerLaunchd:
		tmpl = launchdTmpl()
	case ManagerSchtasks:
		tmpl = taskTmpl()
		if s.TaskName == "" {
			s.TaskName = DefaultTaskName
		}
		if s.User && s.TaskUser == "" {
			return nil, fmt.Errorf("render schtasks file: a user task needs the account name")
		}
	default:
		return nil, fmt.Errorf("render service file: %w %q", ErrUnknownManager, s.Manager)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, s); err != nil {
		return nil, fmt.Errorf("render %s file: %w", s.Manager, err)
	}
	return b.Bytes(), nil
}

var funcs = template.FuncMap{
	"budget": func(d time.Duration) string { return fmtSeconds(StopBudget(d)) },
	"budgetSeconds": func(d time.Duration) int {
		return int(StopBudget(d) / time.Second)
	},
	"secs":   fmtSeconds,
	"margin": func() string { return fmtSeconds(StopMargin) },
	"sd":     func(args ...string) string { return systemdLine(args) },
	"sdargs": systemdLine,
	"xml": func(s string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(s))
		return b.String()
	},
	"winargs": func(args []string) string {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = windowsQuote(a)
		}
		return strings.Join(q, " ")
	},
}

// systemdLine quotes the words of an Exec*= command line.
func systemdLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = systemdQuote(a)
	}
	return strings.Join(q, " ")
}

// fmtSeconds writes a duration in whole seconds ("45s"), as systemd and people read it.
func fmtSeconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(math.Ceil(d.Seconds())))
}

// systemdQuote quotes one word of an Exec*= line: specifiers (%) and variables ($) are
// escaped, and a word with blanks, quotes or backslashes is double-quoted.
func systemdQuote(s string) string {
	s = strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// windowsQuote quotes one argument the way CommandLineToArgvW splits it.
func windowsQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for _, c := range []byte(s) {
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}

var systemdTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("systemd").Funcs(funcs).Parse(`# schedd under systemd. Written by ` + "`schedd install`" + `; ` + "`schedd install --print`" + ` shows
# what it would write. Edit the config file, not this unit; override with ` + "`systemctl edit`" + `.
[Unit]
Description=schedd gateway supervisor
Documentation=https://github.com/schedd/schedd
{{- if not .User}}
Wants=network-online.target
After=network-online.target
{{- end}}
{{- if .Socket}}
# schedd takes the gateway's socket {{.Socket.Name}} from ` + "`" + `schedd.socket` + "`" + `, which holds it while
# schedd itself restarts.
Requires=schedd.socket
After=schedd.socket
{{- end}}

[Service]
# schedd sends READY=1 once the gateway is first ready, STATUS= on every change,
# WATCHDOG=1 while its supervision loop answers, and STOPPING=1 on stop. Only schedd
# may notify: the gateway gets a notify socket of schedd's own.
Type=notify
NotifyAccess=main
# The binary is the schedd that ran ` + "`schedd install`" + ` (or its --binary PATH): the
# packages put it in /usr/bin, a manual install in /usr/local/bin.
{{- if .Config}}
ExecStartPre={{sd .Binary "config" "validate" .Config}}
{{- end}}
ExecStart={{sd .Binary}} {{sdargs .RunArgs}}
ExecReload=/bin/kill -HUP $MAINPID
WatchdogSec=30s
# Exit codes: 0 is a clean stop. 75 is schedd asking for a fresh process
# (` + "`schedd restart --daemon`" + `, an upgrade): a failure, so it is restarted, like a crash.
# 78 (invalid config), 73 (the state dir is held by another schedd, or a store in it is
# damaged or replaced) and 2 (bad command line) are not: restarting cannot fix them.
Restart=on-failure
RestartSec=2s
RestartPreventExitStatus=2 73 78
# SIGTERM goes to schedd alone, which stops the gateway's process group and the
# processes it adopted as their subreaper (the gateway's orphans, also those that left
# the group) gracefully: their stop signal, SIGKILL after gateway.stop.timeout. While a
# long drain runs schedd asks for more time with EXTEND_TIMEOUT_USEC; what is left at
# TimeoutStopSec gets SIGKILL from systemd.
KillMode=mixed
# gateway.stop.timeout ({{secs .StopTimeout}}) plus {{margin}} for schedd's own shutdown.
TimeoutStopSec={{budget .StopTimeout}}
# schedd's default state dir (lock, notify socket) and runtime dir (control socket).
StateDirectory=schedd
RuntimeDirectory=schedd
{{- if not .User}}
# Sandboxing that guards the kernel without changing the gateway's world, which is the
# service's world too. Left out on purpose: PrivateTmp (gateways keep locks and sockets
# in /tmp that their own CLI must see), ProtectHome and ProtectSystem (gateways keep
# state in a home directory and may update themselves), NoNewPrivileges,
# MemoryDenyWriteExecute and RestrictNamespaces (they break setuid helpers, JIT runtimes
# and browser sandboxes), and device policies (GPUs). None of the options below limits
# schedd signalling, waiting for or reaping its own children.
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectHostname=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
{{- end}}

[Install]
WantedBy={{if .User}}default.target{{else}}multi-user.target{{end}}
`))
})

var launchdTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("launchd").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!--
  schedd under launchd, as written by ` + "`schedd install`" + `. The binary is the schedd
  that ran it, or the path given with its binary option.
  Exit codes: KeepAlive/SuccessfulExit=false starts schedd again after any
  non-zero exit, so 75 (schedd asking for a fresh process) and crashes restart it, and a
  clean stop (0) does not. launchd cannot exempt codes: after 78 (invalid config) or 73
  (state dir held by another schedd, or a store in it damaged) it retries every
  ThrottleInterval seconds, and a fixed config (or a restored store) brings schedd up by
  itself.
  ExitTimeOut: gateway.stop.timeout ({{secs .StopTimeout}}) plus {{margin}} between SIGTERM and SIGKILL.
-->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{{xml "` + LaunchdLabel + `"}}</string>
	<key>ProgramArguments</key>
	<array>
		<string>{{xml .Binary}}</string>
{{- range .RunArgs}}
		<string>{{xml .}}</string>
{{- end}}
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>ExitTimeOut</key>
	<integer>{{budgetSeconds .StopTimeout}}</integer>
	<key>ProcessType</key>
	<string>Standard</string>
{{- if .LogPath}}
	<key>StandardOutPath</key>
	<string>{{xml .LogPath}}</string>
	<key>StandardErrorPath</key>
	<string>{{xml .LogPath}}</string>
{{- end}}
</dict>
</plist>
`))
})

var taskTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("schtasks").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<!--
  schedd as a Windows scheduled task, as written by ` + "`schedd install`" + `.
  ExecutionTimeLimit PT0S: no time limit (the default of 72 hours would stop schedd
  after three days). MultipleInstancesPolicy IgnoreNew: a start while schedd runs does
  nothing; schedd's own lock would refuse a second instance anyway (exit 73), and Queue
  would start one after a deliberate stop. RestartOnFailure covers a failed start; schedd replacing
  itself (exit 75) relaunches the task explicitly, through a helper that waits for the
  old process to be gone and checks that a new one came up.
-->
<Task version="1.4" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description>schedd gateway supervisor</Description>
    <URI>\{{xml .TaskName}}</URI>
  </RegistrationInfo>
  <Triggers>
{{- if .User}}
    <LogonTrigger>
      <Enabled>true</Enabled>
      <UserId>{{xml .TaskUser}}</UserId>
    </LogonTrigger>
{{- else}}
    <BootTrigger>
      <Enabled>true</Enabled>
    </BootTrigger>
{{- end}}
  </Triggers>
  <Principals>
    <Principal id="Author">
{{- if .User}}
      <UserId>{{xml .TaskUser}}</UserId>
      <LogonType>InteractiveToken</LogonType>
      <RunLevel>LeastPrivilege</RunLevel>
{{- else}}
      <UserId>S-1-5-18</UserId>
      <RunLevel>HighestAvailable</RunLevel>
{{- end}}
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <AllowHardTerminate>true</AllowHardTerminate>
    <StartWhenAvailable>true</StartWhenAvailable>
    <RunOnlyIfNetworkAvailable>false</RunOnlyIfNetworkAvailable>
    <IdleSettings>
      <StopOnIdleEnd>false</StopOnIdleEnd>
      <RestartOnIdle>false</RestartOnIdle>
    </IdleSettings>
    <AllowStartOnDemand>true</AllowStartOnDemand>
    <Enabled>true</Enabled>
    <Hidden>false</Hidden>
    <RunOnlyIfIdle>false</RunOnlyIfIdle>
    <WakeToRun>false</WakeToRun>
    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>
    <Priority>5</Priority>
    <RestartOnFailure>
      <Interval>PT1M</Interval>
      <Count>999</Count>
    </RestartOnFailure>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command>{{xml .Binary}}</Command>
      <Arguments>{{xml (winargs .RunArgs)}}</Arguments>
    </Exec>
  </Actions>
</Task>
`))
})

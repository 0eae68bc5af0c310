package platform

import (
	"slices"
	"strings"
	"testing"
)

// TestRenderSocketUnit_RSOCK06: a unix socket gets its file's mode and owner, specifiers
// are escaped, and only systemd renders a socket unit.
func TestRenderSocketUnit_RSOCK06(t *testing.T) {
	s := ServiceSpec{Manager: ManagerSystemd, Binary: "/usr/bin/schedd",
		Socket: &SocketSpec{Name: "admin", Listen: "/run/gw/100%.sock", Mode: "0660", User: "gw", Group: "www"}}
	b, err := RenderSocketUnit(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nListenStream=/run/gw/100%%.sock\n", "\nFileDescriptorName=admin\n", "\nSocketMode=0660\n",
		"\nSocketUser=gw\n", "\nSocketGroup=www\n", "\nWantedBy=sockets.target\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("socket unit lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "Backlog=") {
		t.Errorf("a backlog of 0 is systemd's default, not Backlog=0:\n%s", b)
	}
	unit, err := RenderServiceFile(s)
	if err != nil || !strings.Contains(string(unit), "\nRequires=schedd.socket\nAfter=schedd.socket\n") {
		t.Errorf("the service does not require its socket (%v):\n%s", err, unit)
	}
	for _, bad := range []ServiceSpec{{Manager: ManagerSystemd}, {Manager: ManagerLaunchd, Socket: s.Socket}} {
		if _, err := RenderSocketUnit(bad); err == nil {
			t.Errorf("%+v rendered a socket unit", bad)
		}
	}
}

// TestInstallStepsWithSocket_RSOCK06: the socket is enabled with the service and started
// before it; a change stops the service first (systemd refuses to start a socket whose
// service runs), and an unchanged socket is never restarted, which would drop the
// connections in its backlog. Uninstalling stops the socket first.
func TestInstallStepsWithSocket_RSOCK06(t *testing.T) {
	sd := ServiceSpec{Manager: ManagerSystemd, Socket: &SocketSpec{Name: "web", Listen: "8089"}}
	argvs := func(steps []ServiceStep) []string {
		var out []string
		for _, s := range steps {
			out = append(out, strings.Join(s.Argv, " "))
		}
		return out
	}
	head := []string{"systemctl daemon-reload", "systemctl enable schedd.socket schedd.service"}
	for _, c := range []struct {
		changed, socketChanged, start bool
		want                          []string
	}{
		{true, true, true, []string{"systemctl stop schedd.service", "systemctl restart schedd.socket", "systemctl start schedd.service"}},
		{true, false, true, []string{"systemctl stop schedd.service", "systemctl start schedd.socket", "systemctl start schedd.service"}},
		{false, false, true, []string{"systemctl start schedd.socket", "systemctl start schedd.service"}},
		{true, true, false, nil},
	} {
		got := argvs(InstallStepsWithSocket(sd, "", 0, c.changed, c.socketChanged, c.start))
		if want := append(slices.Clone(head), c.want...); !slices.Equal(got, want) {
			t.Errorf("changed %v, socket changed %v, start %v: %q, want %q", c.changed, c.socketChanged, c.start, got, want)
		}
	}
	if got, want := argvs(UninstallSteps(sd, 0)), []string{"systemctl disable --now schedd.socket", "systemctl disable --now schedd.service"}; !slices.Equal(got, want) {
		t.Errorf("uninstall: %q", got)
	}
}

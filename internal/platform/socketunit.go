package platform

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"text/template"
)

// SocketUnit is the systemd socket unit `schedd install` writes beside SystemdUnit when a
// gateway.sockets entry takes its socket from the service manager (from: NAME) and says
// what to listen on. systemd pairs it with SystemdUnit by their common name.
const SocketUnit = "schedd.socket"

// SocketSpec is the socket of SocketUnit.
type SocketSpec struct {
	// Name is FileDescriptorName=: the name schedd finds the socket under in its own
	// LISTEN_FDNAMES (the entry's from).
	Name string
	// Listen is ListenStream=: "IP:port", "[IPv6]:port", a bare port (every address,
	// IPv6 and IPv4) or the absolute path of a unix socket file.
	Listen  string
	Backlog int    // Backlog=; 0 leaves systemd's default
	Mode    string // SocketMode= of a unix socket file ("0660"); "" leaves systemd's default
	User    string // SocketUser= of a unix socket file
	Group   string // SocketGroup= of a unix socket file
}

// RenderSocketUnit renders SocketUnit for s, whose Socket must be set (systemd only).
func RenderSocketUnit(s ServiceSpec) ([]byte, error) {
	if s.Manager != ManagerSystemd || s.Socket == nil {
		return nil, fmt.Errorf("render socket unit: only systemd passes schedd sockets of its own")
	}
	var b bytes.Buffer
	if err := socketTmpl().Execute(&b, s.Socket); err != nil {
		return nil, fmt.Errorf("render socket unit: %w", err)
	}
	return b.Bytes(), nil
}

// socketValue escapes specifiers (%) in a value of a [Socket] setting, which systemd
// takes whole, without quotes.
func socketValue(v string) string {
	return strings.ReplaceAll(v, "%", "%%")
}

var socketTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("socket").Funcs(template.FuncMap{"v": socketValue}).Parse(`# schedd's listening socket under systemd. Written by ` + "`schedd install`" + ` from the
# gateway.sockets entry with from: {{.Name}}; edit that entry, not this unit. systemd holds
# the socket, so connections wait in its backlog while schedd itself restarts, and passes
# it to schedd.service (the service of the same name), which hands it on to every gateway.
[Unit]
Description=schedd gateway socket {{.Name}}
Documentation=https://github.com/schedd/schedd

[Socket]
ListenStream={{v .Listen}}
FileDescriptorName={{v .Name}}
{{- if .Backlog}}
Backlog={{.Backlog}}
{{- end}}
{{- if .Mode}}
SocketMode={{.Mode}}
{{- end}}
{{- if .User}}
SocketUser={{v .User}}
{{- end}}
{{- if .Group}}
SocketGroup={{v .Group}}
{{- end}}

[Install]
WantedBy=sockets.target
`))
})

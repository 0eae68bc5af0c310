package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
)

// socketUnit returns the socket systemd is to hold for schedd (schedd.socket): the one
// gateway.sockets entry with from: NAME and a listen address. An entry with from but no
// listen gets no unit (a note says so); another manager than systemd cannot pass sockets
// the way schedd takes them, and two such entries cannot share one unit (systemd gives
// every socket of a unit the same name): both are refused naming the entry.
func socketUnit(cfg *config.Config, manager string) (*platform.SocketSpec, []string, error) {
	if cfg == nil {
		return nil, nil, nil
	}
	var spec *platform.SocketSpec
	var notes []string
	first := 0
	for i, s := range cfg.Gateway.Sockets {
		if s.From == "" {
			continue
		}
		if manager != platform.ManagerSystemd {
			return nil, nil, withCode(exitConfig, cfg.SocketError(i, "from", fmt.Sprintf(
				"a socket taken from the service manager needs systemd (schedd.socket): %s does not pass sockets with LISTEN_FDS; use listen, and schedd binds it itself",
				manager)))
		}
		if s.Listen == "" {
			notes = append(notes, fmt.Sprintf("gateway.sockets[%d] takes socket %q from systemd but has no listen: no socket unit is written for it; "+
				"give it listen, or write a socket unit of your own with FileDescriptorName=%s and Service=%s", i, s.From, s.From, platform.SystemdUnit))
			continue
		}
		if spec != nil {
			return nil, nil, withCode(exitConfig, cfg.SocketError(i, "from", fmt.Sprintf(
				"schedd install writes one socket unit (%s, for gateway.sockets[%d]) and systemd names all its sockets alike; "+
					"drop listen here and write a socket unit of your own for %q", platform.SocketUnit, first, s.From)))
		}
		first = i
		spec = &platform.SocketSpec{Name: s.From, Listen: listenStream(s.Listen), Backlog: s.Backlog, Mode: s.Mode}
		if s.Owner != "" {
			spec.User, spec.Group, _ = strings.Cut(s.Owner, ":")
		}
	}
	return spec, notes, nil
}

// listenStream turns a gateway.sockets listen address into systemd's ListenStream= form:
// a unix socket's path, a bare port for every address, and 127.0.0.1 for localhost (as
// schedd binds it), since systemd takes no host names.
func listenStream(listen string) string {
	if p, ok := strings.CutPrefix(listen, "unix:"); ok {
		return p
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil { // checked when the config loaded
		return listen
	}
	switch host {
	case "":
		return port
	case "localhost":
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

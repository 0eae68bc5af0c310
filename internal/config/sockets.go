package config

import (
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Socket is one listening socket of gateway.sockets: schedd binds Listen (or takes From,
// one of its own inherited sockets) before the gateway's first start and keeps it open for
// its whole life, so connections wait in the kernel's backlog while the gateway restarts.
type Socket struct {
	// Name is the socket's name in LISTEN_FDNAMES (required, unique).
	Name string `yaml:"name"`
	// Listen is "host:port" (an IP literal, empty or localhost host; a fixed port) or
	// "unix:/absolute/path". With From, schedd does not bind it: it is what the service
	// manager's socket listens on, which `schedd install` writes into schedd.socket.
	Listen string `yaml:"listen"`
	// From names one of schedd's own inherited sockets (its LISTEN_FDNAMES) to pass on
	// instead of binding Listen: the port then outlives a restart of schedd too.
	From string `yaml:"from"`
	// Backlog is the listen backlog, 1 to MaxSocketBacklog; 0 (absent) is the system's
	// maximum (SOMAXCONN).
	Backlog int `yaml:"backlog"`
	// Mode is the unix socket file's permission bits in octal ("0660"); "" keeps the
	// umask's.
	Mode string `yaml:"mode"`
	// Owner is "user" or "user:group" (names or numeric ids) of the unix socket file.
	Owner string `yaml:"owner"`
}

// MaxSocketBacklog is the largest gateway.sockets[].backlog.
const MaxSocketBacklog = 65535

// UnixPath returns the socket file of a "unix:" Listen and true, or "" and false.
func (s Socket) UnixPath() (string, bool) {
	return strings.CutPrefix(s.Listen, "unix:")
}

// socketsGOOS is the system gateway.sockets is checked for: where schedd runs, or another
// in a test.
var socketsGOOS = runtime.GOOS

// sockets checks gateway.sockets and restart.overlap, which shares them.
func (k *checker) sockets() {
	g := &k.c.Gateway
	if len(g.Sockets) > 0 && socketsGOOS == "windows" {
		k.errf("gateway.sockets", "is not supported on Windows (a gateway cannot inherit listening sockets there); remove the key")
	}
	names := map[string]bool{}
	listens := map[string]bool{}
	for i, s := range g.Sockets {
		p := index("gateway.sockets", i)
		k.name(p+".name", "socket name", s.Name)
		if names[s.Name] && s.Name != "" {
			k.errf(p+".name", "socket name %s is used twice", quote(s.Name))
		}
		names[s.Name] = true
		if s.Listen == "" && s.From == "" {
			k.errf(p, "needs listen (an address to bind) or from (one of schedd's own inherited sockets)")
		}
		if s.From != "" {
			k.name(p+".from", "LISTEN_FDNAMES name", s.From)
		}
		if s.Listen != "" {
			k.socketListen(p+".listen", s.Listen)
			if listens[s.Listen] {
				k.errf(p+".listen", "%s is listed twice", quote(s.Listen))
			}
			listens[s.Listen] = true
		}
		if s.Backlog != 0 || k.c.has(p+".backlog") {
			if s.Backlog < 1 || s.Backlog > MaxSocketBacklog {
				k.errf(p+".backlog", "must be from 1 to %d, got %d", MaxSocketBacklog, s.Backlog)
			}
			if s.From != "" && s.Listen == "" {
				k.errf(p+".backlog", "is set by the service manager that made the socket: with from, it needs listen (what `schedd install` writes into schedd.socket)")
			}
		}
		_, unix := s.UnixPath()
		if s.Mode != "" {
			if m, err := strconv.ParseUint(s.Mode, 8, 32); err != nil || m > 0o777 {
				k.errf(p+".mode", "must be octal permission bits such as \"0660\", got %s", quote(s.Mode))
			}
		}
		if s.Owner != "" && (strings.Count(s.Owner, ":") > 1 || strings.HasPrefix(s.Owner, ":") || strings.HasSuffix(s.Owner, ":")) {
			k.errf(p+".owner", "must be user or user:group, got %s", quote(s.Owner))
		}
		for key, v := range map[string]string{"mode": s.Mode, "owner": s.Owner} {
			if v != "" && !unix {
				k.errf(p+"."+key, "is only for unix sockets (listen: \"unix:/path\")")
			}
		}
	}
	r := &k.c.Restart
	if !r.Overlap {
		return
	}
	switch {
	case r.Method == MethodSignal:
		k.errf("restart.overlap", "cannot be used with method signal: one process restarts itself, nothing runs beside it")
	case len(g.Sockets) == 0:
		k.errf("restart.overlap", "needs gateway.sockets: the old and the new gateway can only both serve on sockets schedd holds")
	case g.Readiness.Notify == nil:
		k.errf("restart.overlap", "needs gateway.readiness notify: a probe through the shared sockets may be answered by the old gateway, so only READY=1 from the new one tells it is ready")
	}
}

// socketListen checks a gateway.sockets[].listen address.
func (k *checker) socketListen(path, s string) {
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		switch {
		case p == "":
			k.errf(path, "needs a socket file after unix:")
		case !filepath.IsAbs(p):
			k.errf(path, "unix socket path must be absolute, got %s", quote(p))
		case strings.ContainsRune(p, 0):
			k.errf(path, "must not contain a NUL byte")
		}
		return
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		k.errf(path, "must be host:port (\"127.0.0.1:8089\", \"[::]:443\") or unix:/path, got %s", quote(s))
		return
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		k.errf(path, "host must be an IP address, localhost or empty (every address), got %s", quote(host))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		k.errf(path, "port must be a number from 1 to 65535, got %s", quote(port))
	}
}

// SocketError is a problem met while making gateway.sockets[i] (its address cannot be
// bound, its inherited socket is missing), as a config Error at the key's position: the
// socket is part of the configuration, so it makes schedd exit 78 like any bad value.
func (c *Config) SocketError(i int, key, msg string) *Error {
	path := index("gateway.sockets", i)
	if key != "" {
		path += "." + key
	}
	line, col := c.posOf(path)
	return &Error{File: c.Path, Line: line, Column: col, Field: path, Msg: msg}
}

package config

import (
	"runtime"
	"strings"
	"testing"
)

// TestSocketsChecks_RSOCK02: every bad gateway.sockets entry and every restart.overlap
// that could not work is refused with its position and key.
func TestSocketsChecks_RSOCK02(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("gateway.sockets is refused as a whole on Windows")
	}
	const ok = "gateway:\n  command: [gw]\n  readiness: {notify: {}}\n  sockets:\n"
	tests := []struct{ name, src, want string }{
		{"no name", ok + "    - {listen: '127.0.0.1:1'}\n", "f.yaml:5:7: gateway.sockets[0].name: is required"},
		{"neither listen nor from", ok + "    - {name: a}\n", "f.yaml:5:7: gateway.sockets[0]: needs listen"},
		{"backlog from elsewhere", ok + "    - {name: a, from: b, backlog: 5}\n", "gateway.sockets[0].backlog: is set by the service manager that made the socket: with from, it needs listen"},
		{"bad listen with from", ok + "    - {name: a, from: b, listen: 'example.com:80'}\n", "gateway.sockets[0].listen: host must be an IP address"},
		{"bad address", ok + "    - {name: a, listen: 'example.com:80'}\n", "gateway.sockets[0].listen: host must be an IP address"},
		{"port 0", ok + "    - {name: a, listen: '127.0.0.1:0'}\n", "gateway.sockets[0].listen: port must be a number from 1 to 65535"},
		{"relative unix", ok + "    - {name: a, listen: 'unix:gw.sock'}\n", "unix socket path must be absolute"},
		{"backlog range", ok + "    - {name: a, listen: '127.0.0.1:1', backlog: 0}\n", "gateway.sockets[0].backlog: must be from 1 to 65535, got 0"},
		{"backlog too big", ok + "    - {name: a, listen: '127.0.0.1:1', backlog: 70000}\n", "must be from 1 to 65535, got 70000"},
		{"mode on tcp", ok + "    - {name: a, listen: '127.0.0.1:1', mode: '0600'}\n", "gateway.sockets[0].mode: is only for unix sockets"},
		{"bad mode", ok + "    - {name: a, listen: 'unix:/x.sock', mode: '0999'}\n", "gateway.sockets[0].mode: must be octal"},
		{"twice", ok + "    - {name: a, listen: '127.0.0.1:1'}\n    - {name: a, listen: '127.0.0.1:1'}\n", "socket name \"a\" is used twice"},
		{"overlap with signal", "gateway:\n  command: [gw]\n  readiness: {notify: {}}\n  sockets: [{name: a, listen: '127.0.0.1:1'}]\nrestart: {overlap: true, method: signal}\n",
			"restart.overlap: cannot be used with method signal"},
		{"overlap without sockets", "gateway: {command: [gw], readiness: {notify: {}}}\nrestart: {overlap: true}\n",
			"restart.overlap: needs gateway.sockets"},
		{"overlap with a probe", "gateway:\n  command: [gw]\n  readiness: {http: {url: 'http://127.0.0.1:1/'}}\n  sockets: [{name: a, listen: '127.0.0.1:1'}]\nrestart: {overlap: true}\n",
			"restart.overlap: needs gateway.readiness notify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErr(t, tt.src)
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
	good := ok + "    - {name: web, listen: '[::]:8089', backlog: 512}\n    - {name: admin, listen: 'unix:/run/gw.sock', mode: '0660', owner: 'root:root'}\n    - {name: api, from: api}\n    - {name: pub, from: pub, listen: '127.0.0.1:8090', backlog: 64}\nrestart: {overlap: true}\n"
	if got := parseErr(t, good); got != "" {
		t.Fatalf("a good file was refused: %s", got)
	}
}

// On Windows gateway.sockets is refused as a whole, naming the key (R-SOCK-02): a gateway
// cannot inherit listening sockets there.
func TestSocketsRefusedOnWindows_RSOCK02(t *testing.T) {
	was := socketsGOOS
	socketsGOOS = "windows"
	t.Cleanup(func() { socketsGOOS = was })
	got := parseErr(t, "gateway:\n  command: [gw]\n  sockets: [{name: a, listen: '127.0.0.1:1'}]\n")
	if !strings.Contains(got, "gateway.sockets: is not supported on Windows") {
		t.Fatalf("got %q, want gateway.sockets refused on Windows", got)
	}
}

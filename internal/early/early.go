// Package early sends the request of `schedd restart` to the daemon before the rest of
// schedd is initialized.
//
// A Go program runs the initializers of every package it links before main, and schedd
// links the SQLite driver, the HTTP stack, the YAML parser and the logger: about a
// millisecond of start-up that a restart request would otherwise wait for. On unix this
// package imports only os, syscall, strconv and internal/dirs (which imports os), and a
// package is initialized as soon as all it imports is, so the runtime runs its init
// before those of the heavy packages (a test holds it before net/http and the SQLite
// driver). The init sends the request at once when the command line is one of the plain
// forms below.
//
// The init then waits, reading nothing, until the daemon's reply begins to arrive, for at
// most HoldReply: the rest of the command's start-up (about a millisecond of CPU, much of
// it in page faults) would otherwise run while the daemon stops the gateway and starts
// the next one, and on a machine with few cores take their CPU. With --wait the reply
// comes when the restart is done, so a restart of a gateway that is ready at once has the
// machine to itself; a longer one goes on while the command starts.
//
// The command then runs as always: cobra parses the same flags, and the control client,
// about to send the same request, takes the connection it went out on (Take) and reads
// the reply there. Anything else (another command, another flag, a failed connect) leaves
// nothing sent, and the command makes its request the usual way.
//
// The plain forms: `schedd restart` with any of --now, --wait and --json, each at most
// once, and --socket PATH or --socket=PATH; the socket is --socket, else $SCHEDD_SOCKET,
// else the default one, as the command resolves it.
package early

import "os"

// Request is a request sent early, waiting for the client to take its connection.
type Request struct {
	Socket string
	Method string
	Path   string
	Body   []byte
	conn   *os.File // the connection, its request written
}

var sent *Request

// HoldReply is how long the init waits for the daemon's reply before the command goes on
// starting, in nanoseconds. It covers a restart of a gateway that is ready at once; an ^C
// within it ends the command by the signal's default action (the restart goes on, as
// when the command stops waiting later).
const HoldReply = 100e6

func init() {
	if len(os.Args) > 1 && os.Args[1] == "restart" {
		if req, ok := Parse(os.Args[2:], os.Getenv); ok {
			sent = send(req, HoldReply)
		}
	}
}

// Parse returns the request `schedd restart ARGS` makes when ARGS is one of the plain
// forms, and false otherwise.
func Parse(args []string, getenv func(string) string) (Request, bool) {
	var now, wait, json bool
	socket := ""
	for i := 0; i < len(args); i++ {
		var seen *bool
		switch a := args[i]; {
		case a == "--now":
			seen = &now
		case a == "--wait":
			seen = &wait
		case a == "--json":
			seen = &json
		case a == "--socket" && socket == "" && i+1 < len(args) && plainValue(args[i+1]):
			i++
			socket = args[i]
			continue
		case len(a) > len("--socket=") && a[:len("--socket=")] == "--socket=" && socket == "":
			socket = a[len("--socket="):]
			continue
		default:
			return Request{}, false
		}
		if *seen {
			return Request{}, false
		}
		*seen = true
	}
	if socket == "" {
		socket = getenv("SCHEDD_SOCKET")
	}
	if socket == "" {
		socket = DefaultSocket()
	}
	return Request{Socket: socket, Method: "POST", Path: "/v1/restart", Body: restartBody(now, wait)}, true
}

// plainValue is a flag value that cobra reads as this package does.
func plainValue(v string) bool { return v != "" && v[0] != '-' }

// restartBody is the JSON of daemon.RestartRequest{Now: now, Wait: wait, Source: "cli"},
// as its AppendJSON writes it (a test holds the two together).
func restartBody(now, wait bool) []byte {
	b := []byte{'{'}
	if now {
		b = append(b, `"now":true,`...)
	}
	if wait {
		b = append(b, `"wait":true,`...)
	}
	return append(b, `"source":"cli"}`...)
}

// Take returns the connection on which the request for socket, method, path and body went
// out early, with nothing read from it yet, and forgets it; nil when there is none. A
// request sent early that is not the one asked for is closed.
func Take(socket, method, path string, body []byte) *os.File {
	r := sent
	if r == nil {
		return nil
	}
	sent = nil
	if r.Socket != socket || r.Method != method || r.Path != path || string(r.Body) != string(body) {
		r.conn.Close()
		return nil
	}
	return r.conn
}

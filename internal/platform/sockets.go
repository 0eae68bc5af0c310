package platform

import (
	"os"
	"strconv"
	"strings"
)

// ListenSpec is a listening socket schedd creates for the gateway (gateway.sockets).
type ListenSpec struct {
	// Address is "host:port" (TCP; an empty host is every address, IPv6 and IPv4) or
	// "unix:/absolute/path".
	Address string
	// Backlog is the listen backlog; <= 0 is the system's maximum (SOMAXCONN).
	Backlog int
	// Mode, when not 0, is the unix socket file's permission bits.
	Mode os.FileMode
	// Owner, when set, is "user" or "user:group" (names or numeric ids) of the unix socket file.
	Owner string
}

// ListenFDsEnv is what a process started with files (in order, from fd 3) named names must
// find in its environment under systemd's socket-activation protocol, less LISTEN_PID,
// which only the process itself can know (see Command.ListenNames).
func ListenFDsEnv(names []string) map[string]string {
	return map[string]string{
		"LISTEN_FDS":     strconv.Itoa(len(names)),
		"LISTEN_FDNAMES": strings.Join(names, ":"),
	}
}

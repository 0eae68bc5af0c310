package daemon

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/supervisor"
)

// gatewaySockets are the gateway's listening sockets (gateway.sockets): made once, before
// the first start, and kept open until schedd exits, so a connection made while the
// gateway restarts waits in the kernel's backlog instead of being refused.
type gatewaySockets struct {
	specs []config.Socket // as configured at start: a reload does not change them
	socks []supervisor.Socket
	unix  []string // socket files schedd made, removed at exit
}

// openSockets binds (or takes from schedd's own service manager) every socket of
// gateway.sockets. A socket that cannot be made is a config error naming it.
func openSockets(c *config.Config, inherited map[string]*os.File) (*gatewaySockets, error) {
	gs := &gatewaySockets{specs: slices.Clone(c.Gateway.Sockets)}
	for i, s := range c.Gateway.Sockets {
		if s.From != "" {
			f, ok := inherited[s.From]
			if !ok {
				gs.close()
				return nil, c.SocketError(i, "from", fmt.Sprintf("schedd was not given a socket named %q (LISTEN_FDNAMES: %s)",
					s.From, strings.Join(sortedKeys(inherited), ":")))
			}
			gs.socks = append(gs.socks, supervisor.Socket{Name: s.Name, File: f})
			continue
		}
		spec := platform.ListenSpec{Address: s.Listen, Backlog: s.Backlog, Owner: s.Owner}
		if s.Mode != "" {
			m, _ := strconv.ParseUint(s.Mode, 8, 32) // checked by Validate
			spec.Mode = os.FileMode(m)
		}
		f, err := platform.Listen(spec)
		if err != nil {
			gs.close()
			return nil, c.SocketError(i, "listen", fmt.Sprintf("cannot listen on %s: %v", s.Listen, err))
		}
		gs.socks = append(gs.socks, supervisor.Socket{Name: s.Name, File: f})
		if p, ok := s.UnixPath(); ok {
			gs.unix = append(gs.unix, p)
		}
	}
	return gs, nil
}

func sortedKeys(m map[string]*os.File) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// close closes the sockets and removes the socket files schedd made.
func (gs *gatewaySockets) close() {
	if gs == nil {
		return
	}
	for _, s := range gs.socks {
		s.File.Close()
	}
	for _, p := range gs.unix {
		os.Remove(p)
	}
	gs.socks, gs.unix = nil, nil
}

// changed warns when a reloaded config asks for other sockets: they are made once.
func (gs *gatewaySockets) changed(log *zap.Logger, next []config.Socket) {
	if !slices.Equal(gs.specs, next) {
		log.Warn("config reload: gateway.sockets changed; the sockets schedd holds stay as they are until schedd itself restarts")
	}
}

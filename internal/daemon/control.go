package daemon

import (
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/server"
)

// routes adds the daemon's own endpoints to the control API: stop, restart and the
// gateway's output. The components add theirs (component.routes).
func (d *Daemon) routes(srv *server.Server) {
	srv.AddLifecycle(d)
	srv.AddLogs(d.output)
}

var _ server.Lifecycle = (*Daemon)(nil)

// Stop asks the main loop to stop, as SIGTERM does; a stop already on its way is enough.
func (d *Daemon) Stop(why string) {
	select {
	case d.stopc <- why:
	default: // a stop is already on its way
	}
}

// RestartGateway hands a restart of the gateway to the restart coordinator.
func (d *Daemon) RestartGateway(r restart.Request) restart.Ticket { return d.coord.Request(r) }

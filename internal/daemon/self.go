package daemon

import (
	"context"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/handoff"
)

// RestartDaemon replaces schedd itself with a fresh process (`schedd restart --daemon`,
// or after an upgrade replaced the binary): handoff checks the new binary and starts what
// brings schedd back, then hands its exit to the main loop, which stops the gateway,
// releases the lock and the sockets and runs it. handoff.ErrBusy means a replacement is
// already under way.
func (d *Daemon) RestartDaemon(ctx context.Context) (api.SelfRespawn, error) {
	return d.self.Replace(ctx, handoff.Setup{
		Environ:        d.opts.Environ,
		ServiceManager: d.opts.ServiceManager,
		Socket:         d.opts.Socket,
		ConfigPath:     func() string { return d.config().Path },
		Log:            d.log,
		HandOver: func(x *handoff.Exit) bool {
			select {
			case d.handoffc <- x:
				return true
			default:
				return false
			}
		},
	})
}

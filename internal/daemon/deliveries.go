package daemon

// setupDeliveries builds the durable delivery component (nil: none yet).
func (d *Daemon) setupDeliveries() (*component, error) { return nil, nil }

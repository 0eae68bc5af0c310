package daemon

// setupHeartbeat builds the heartbeat component (nil: none yet).
func (d *Daemon) setupHeartbeat() (*component, error) { return nil, nil }

package config

import (
	"net/url"
	"strings"
)

// openclawIdle checks the openclaw idle probe.
func (k *checker) openclawIdle(path string, o *OpenClawProbe) {
	k.command(path+".command", o.Command)
	if o.Port < 0 || o.Port > 65535 { // 0: no --port
		k.errf(path+".port", "must be from 1 to 65535, got %d", o.Port)
	}
	if o.URL != "" {
		if o.Port != 0 {
			k.errf(path+".url", "and port name the gateway twice; give one")
		}
		if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			k.errf(path+".url", "must be a ws:// or wss:// URL")
		}
	}
}

// fence checks restart.defer_until_idle.fence: it needs the openclaw idle probe, and a
// liveness probe must not read /readyz, which a fenced OpenClaw answers 503 by design.
func (k *checker) fence(di *DeferUntilIdle) {
	if di.Fence == nil || !*di.Fence {
		return
	}
	if di.Idle == nil || di.Idle.OpenClaw == nil {
		k.errf("restart.defer_until_idle.fence", "needs the openclaw idle probe (restart.defer_until_idle.idle.openclaw)")
		return
	}
	if l := k.c.Gateway.Liveness; l != nil && l.HTTP != nil {
		if u, err := url.Parse(l.HTTP.URL); err == nil && strings.TrimSuffix(u.Path, "/") == "/readyz" {
			k.errf("restart.defer_until_idle.fence", "cannot be used with a liveness probe on /readyz (gateway.liveness.http.url): "+
				"a fenced OpenClaw answers /readyz 503 by design; probe liveness on /healthz")
		}
	}
}

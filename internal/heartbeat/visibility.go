package heartbeat

import "strings"

// Visibility says which heartbeat results are shown. Unset fields fall through: per
// account, per channel, these top-level values, then the built-ins.
type Visibility struct {
	ShowOK       *bool
	ShowAlerts   *bool
	UseIndicator *bool
	Channels     map[string]ChannelVisibility
}

// ChannelVisibility is one channel's visibility, with per-account settings inside.
type ChannelVisibility struct {
	ShowOK       *bool
	ShowAlerts   *bool
	UseIndicator *bool
	Accounts     map[string]Visibility
}

// ResolvedVisibility is visibility with every field decided. It travels in the pulse.
type ResolvedVisibility struct {
	ShowOK       bool `json:"show_ok"`
	ShowAlerts   bool `json:"show_alerts"`
	UseIndicator bool `json:"use_indicator"`
}

// DefaultVisibility is the built-in visibility: alerts and the indicator, no OK messages.
var DefaultVisibility = ResolvedVisibility{ShowOK: false, ShowAlerts: true, UseIndicator: true}

// Any reports whether at least one output is on; all off skips runs as alerts-disabled.
func (v ResolvedVisibility) Any() bool { return v.ShowOK || v.ShowAlerts || v.UseIndicator }

// String lists the enabled outputs, comma separated ("show_alerts,use_indicator").
func (v ResolvedVisibility) String() string {
	var parts []string
	if v.ShowOK {
		parts = append(parts, "show_ok")
	}
	if v.ShowAlerts {
		parts = append(parts, "show_alerts")
	}
	if v.UseIndicator {
		parts = append(parts, "use_indicator")
	}
	return strings.Join(parts, ",")
}

// ResolveVisibility resolves each field independently for a delivery channel and account.
// Channel "none" always gets DefaultVisibility. Channel "" and "webchat" use only the
// top-level values (webchat ignores accounts). Other channels look at the account, the
// channel, the top level, then the built-ins; a missing or unknown account falls through.
func ResolveVisibility(v *Visibility, channel, account string) ResolvedVisibility {
	channel = strings.TrimSpace(channel)
	account = strings.TrimSpace(account)
	if channel == "none" || v == nil {
		return DefaultVisibility
	}
	layers := make([][3]*bool, 0, 3)
	if channel != "" && channel != "webchat" {
		if ch, ok := v.Channels[channel]; ok {
			if acct, ok := ch.Accounts[account]; ok && account != "" {
				layers = append(layers, [3]*bool{acct.ShowOK, acct.ShowAlerts, acct.UseIndicator})
			}
			layers = append(layers, [3]*bool{ch.ShowOK, ch.ShowAlerts, ch.UseIndicator})
		}
	}
	layers = append(layers, [3]*bool{v.ShowOK, v.ShowAlerts, v.UseIndicator})
	out := [3]bool{DefaultVisibility.ShowOK, DefaultVisibility.ShowAlerts, DefaultVisibility.UseIndicator}
	for i := range out {
		for _, l := range layers {
			if l[i] != nil {
				out[i] = *l[i]
				break
			}
		}
	}
	return ResolvedVisibility{ShowOK: out[0], ShowAlerts: out[1], UseIndicator: out[2]}
}

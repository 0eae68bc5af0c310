package heartbeat

import "testing"

func ptr[T any](v T) *T { return &v }

func TestResolveVisibility(t *testing.T) {
	cfg := &Visibility{
		ShowOK: ptr(true), // channel defaults
		Channels: map[string]ChannelVisibility{
			"telegram": {
				ShowAlerts: ptr(false),
				Accounts: map[string]Visibility{
					"work":  {UseIndicator: ptr(false), ShowAlerts: ptr(true)},
					"empty": {},
				},
			},
		},
	}
	for _, tc := range []struct {
		name             string
		v                *Visibility
		channel, account string
		want             ResolvedVisibility
	}{
		{"built-in defaults", nil, "telegram", "", ResolvedVisibility{false, true, true}},
		{"empty config", &Visibility{}, "telegram", "x", ResolvedVisibility{false, true, true}},
		{"channel defaults apply", cfg, "discord", "", ResolvedVisibility{true, true, true}},
		{"per channel overrides defaults", cfg, "telegram", "", ResolvedVisibility{true, false, true}},
		{"per account overrides channel, field by field", cfg, "telegram", "work", ResolvedVisibility{true, true, false}},
		{"account without settings falls through", cfg, "telegram", "empty", ResolvedVisibility{true, false, true}},
		{"unknown account falls through", cfg, "telegram", "nobody", ResolvedVisibility{true, false, true}},
		{"webchat uses only the defaults", cfg, "webchat", "work", ResolvedVisibility{true, true, true}},
		{"no channel uses only the defaults", cfg, "", "work", ResolvedVisibility{true, true, true}},
		{"channel none is fixed", cfg, "none", "", DefaultVisibility},
	} {
		if got := ResolveVisibility(tc.v, tc.channel, tc.account); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	off := &Visibility{ShowOK: ptr(false), ShowAlerts: ptr(false), UseIndicator: ptr(false)}
	if ResolveVisibility(off, "", "").Any() {
		t.Error("all three off must report Any() == false")
	}
	if s := (ResolvedVisibility{ShowAlerts: true, UseIndicator: true}).String(); s != "show_alerts,use_indicator" {
		t.Errorf("String() = %q", s)
	}
}

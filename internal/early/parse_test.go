package early_test

import (
	"testing"

	"github.com/schedd/schedd/internal/daemon"
	"github.com/schedd/schedd/internal/early"
	"github.com/schedd/schedd/internal/restart"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestParse: the plain forms of `schedd restart` are sent early, with the body the command
// sends (daemon.RestartRequest.AppendJSON) and the socket it resolves; any other form is
// left to the command.
func TestParse(t *testing.T) {
	body := func(now, wait bool) string {
		return string(daemon.RestartRequest{Now: now, Wait: wait, Source: string(restart.SourceCLI)}.AppendJSON(nil))
	}
	noEnv := env(nil)
	for _, tt := range []struct {
		args      []string
		getenv    func(string) string
		socket    string
		now, wait bool
	}{
		{nil, env(map[string]string{"SCHEDD_SOCKET": "/e.sock"}), "/e.sock", false, false},
		{[]string{"--now", "--wait", "--socket", "/s.sock"}, noEnv, "/s.sock", true, true},
		{[]string{"--wait", "--json", "--socket=/s.sock"}, noEnv, "/s.sock", false, true},
		{[]string{"--socket", "/s.sock", "--now"}, env(map[string]string{"SCHEDD_SOCKET": "/e.sock"}), "/s.sock", true, false},
		{[]string{"--now"}, noEnv, early.DefaultSocket(), true, false},
	} {
		r, ok := early.Parse(tt.args, tt.getenv)
		if !ok {
			t.Errorf("%q: not sent early", tt.args)
			continue
		}
		if r.Socket != tt.socket || r.Method != "POST" || r.Path != "/v1/restart" || string(r.Body) != body(tt.now, tt.wait) {
			t.Errorf("%q: %s %s %s on %s, want POST /v1/restart %s on %s", tt.args, r.Method, r.Path, r.Body, r.Socket, body(tt.now, tt.wait), tt.socket)
		}
	}
	for _, args := range [][]string{
		{"--reason", "deploy"}, {"--daemon"}, {"--delay", "0s"}, {"--max-wait", "1m"},
		{"--now", "--now"}, {"--now=true"}, {"--help"}, {"-h"}, {"extra"}, {"--"},
		{"--socket"}, {"--socket", "-x"}, {"--socket="}, {"--socket", "/a", "--socket", "/b"},
		{"--timeout", "1s"},
	} {
		if r, ok := early.Parse(args, noEnv); ok {
			t.Errorf("%q: sent early as %s, want it left to the command", args, r.Body)
		}
	}
}

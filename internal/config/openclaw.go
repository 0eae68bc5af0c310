package config

import (
	"os"
	"strings"
)

// OpenClaw is an OpenClaw gateway's hook, for a heartbeat target (heartbeat.*.target.openclaw:
// POST /hooks/wake) or a delivery sink (deliveries.sinks.NAME.openclaw: /hooks/agent or
// /hooks/wake). The hook token is given inline (Token, a secret) or named by TokenEnv, an
// environment variable of schedd's read when the config is validated and loaded.
type OpenClaw struct {
	URL      string   `yaml:"url" schedd:"url"`      // absolute http(s) URL, required
	Token    string   `yaml:"token" schedd:"secret"` // the gateway's hooks.token
	TokenEnv string   `yaml:"token_env"`             // or the variable that holds it
	Timeout  Duration `yaml:"timeout"`               // default 10s, > 0
}

// HookToken is the token to send: Token, or the value of TokenEnv in schedd's environment
// (Validate has checked that it is set).
func (o *OpenClaw) HookToken() string {
	if o.TokenEnv != "" {
		return os.Getenv(o.TokenEnv)
	}
	return o.Token
}

// openclaw checks o at path; the token is never echoed.
func (k *checker) openclaw(path string, o *OpenClaw) {
	k.url(path+".url", o.URL, true)
	k.positive(path+".timeout", o.Timeout)
	switch {
	case o.Token != "" && o.TokenEnv != "":
		k.errf(path+".token_env", "is set with token; use one of them")
	case o.Token == "" && o.TokenEnv == "":
		k.errf(path+".token", "is required (the gateway's hooks.token), or name the variable holding it in token_env")
	case strings.ContainsAny(o.Token, "\r\n\x00"):
		k.errf(path+".token", "invalid token (value hidden): contains a line break or NUL")
	case o.TokenEnv != "":
		v, ok := os.LookupEnv(o.TokenEnv)
		switch {
		case strings.ContainsAny(o.TokenEnv, "=\x00"):
			k.errf(path+".token_env", "invalid environment variable name %s", quote(o.TokenEnv))
		case !ok || v == "":
			k.errf(path+".token_env", "%s is not set in schedd's environment", quote(o.TokenEnv))
		case strings.ContainsAny(v, "\r\n\x00"):
			k.errf(path+".token_env", "%s holds an invalid token (value hidden): a line break or NUL", quote(o.TokenEnv))
		}
	}
}

package heartbeat

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// DefaultAgentID is the agent that runs when Config.Agents is empty.
const DefaultAgentID = "main"

// Config is the heartbeat section, in plain types that mirror internal/config's
// Heartbeat one to one (Duration fields as time.Duration).
type Config struct {
	// Enabled is the global switch's value until SetEnabled persists another. nil = true.
	Enabled *bool
	// UserTimezone is the zone active hours "user" means; "" = the host zone.
	UserTimezone string
	// Seed fixes the per-agent phases. "" = a random seed created once and persisted.
	Seed string
	// Defaults are merged shallowly under every agent.
	Defaults AgentConfig
	// Agents lists the agents that run. Empty = only DefaultAgentID, with Defaults.
	Agents []AgentConfig
}

// AgentConfig is one agent's heartbeat. In Config.Agents an unset field (nil, "") takes
// the value from Config.Defaults: a shallow merge, so a set map or struct replaces the
// default one whole.
type AgentConfig struct {
	ID          string
	Every       string // upstream grammar; "" = the defaults'; "" there, 0 or invalid disables
	ActiveHours *ActiveHours
	Target      *Target
	Session     string
	Visibility  *Visibility
	Enabled     *bool
	// Channel and Account pick the visibility layers (see ResolveVisibility).
	Channel string
	Account string
}

// Target is where a due heartbeat is pulsed: exactly one kind.
type Target struct {
	HTTP     *HTTPTarget
	Exec     *ExecTarget
	OpenClaw *OpenClawTarget
}

// HTTPTarget POSTs the pulse as JSON.
type HTTPTarget struct {
	URL     string
	Method  string // required; the config's default is POST
	Headers map[string]string
	Timeout time.Duration // required, > 0; the config sets its default
}

// ExecTarget runs a command with the pulse on stdin and in the environment.
type ExecTarget struct {
	Command []string
	Timeout time.Duration // required, > 0; the config sets its default
}

// ErrConfig is wrapped by every *ConfigError.
var ErrConfig = errors.New("invalid heartbeat config")

// ConfigError names the offending field, e.g. "heartbeat.agents[1].id".
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap lets errors.Is(err, ErrConfig) match.
func (e *ConfigError) Unwrap() error { return ErrConfig }

func merge(def, a AgentConfig) AgentConfig {
	out := a
	if out.Every == "" {
		out.Every = def.Every
	}
	if out.ActiveHours == nil {
		out.ActiveHours = def.ActiveHours
	}
	if out.Target == nil {
		out.Target = def.Target
	}
	if out.Session == "" {
		out.Session = def.Session
	}
	if out.Visibility == nil {
		out.Visibility = def.Visibility
	}
	if out.Enabled == nil {
		out.Enabled = def.Enabled
	}
	if out.Channel == "" {
		out.Channel = def.Channel
	}
	if out.Account == "" {
		out.Account = def.Account
	}
	return out
}

// agentPlan is one agent resolved from the config: merged, parsed and checked.
type agentPlan struct {
	cfg      AgentConfig
	runs     bool
	why      string // when !runs: "disabled", "no interval", "no target"
	interval time.Duration
	everyErr error // an unparseable every (the agent is disabled)
	window   Window
	vis      ResolvedVisibility
}

// plan resolves which agents exist and which of them run (upstream 2.1: explicit agents
// only, else the default agent). Structural mistakes are errors; an unparseable every or
// active hours are not (they disable, or fail open) and are reported in the plan.
func (c Config) plan(host *time.Location) ([]agentPlan, error) {
	var errs []error
	if c.Defaults.ID != "" {
		errs = append(errs, &ConfigError{"heartbeat.defaults.id", "must be empty"})
	}
	errs = append(errs, checkTarget("heartbeat.defaults.target", c.Defaults.Target)...)
	agents := c.Agents
	implicit := len(agents) == 0
	if implicit {
		agents = []AgentConfig{{ID: DefaultAgentID}}
	}
	seen := make(map[string]bool, len(agents))
	plans := make([]agentPlan, 0, len(agents))
	for i, a := range agents {
		field := fmt.Sprintf("heartbeat.agents[%d]", i)
		id := strings.TrimSpace(a.ID)
		switch {
		case id == "":
			errs = append(errs, &ConfigError{field + ".id", "is required"})
		case id != a.ID || strings.Contains(id, "::"):
			errs = append(errs, &ConfigError{field + ".id", fmt.Sprintf("%q: no surrounding spaces or \"::\"", a.ID)})
		case seen[id]:
			errs = append(errs, &ConfigError{field + ".id", fmt.Sprintf("duplicate id %q", id)})
		}
		seen[id] = true
		if !implicit {
			errs = append(errs, checkTarget(field+".target", a.Target)...)
		}
		m := merge(c.Defaults, a)
		p := agentPlan{cfg: m}
		p.interval, p.everyErr = resolveInterval(m.Every)
		p.window = NewWindow(m.ActiveHours, c.UserTimezone, host)
		p.vis = ResolveVisibility(m.Visibility, m.Channel, m.Account)
		switch {
		case m.Enabled != nil && !*m.Enabled:
			p.why = "disabled"
		case p.interval <= 0:
			p.why = "no interval"
		case m.Target == nil:
			p.why = "no target"
		default:
			p.runs = true
		}
		plans = append(plans, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return plans, nil
}

func checkTarget(field string, t *Target) []error {
	if t == nil {
		return nil
	}
	var errs []error
	kinds := 0
	for _, set := range []bool{t.HTTP != nil, t.Exec != nil, t.OpenClaw != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		errs = append(errs, &ConfigError{field, "names more than one of http, exec and openclaw; pick one"})
	case kinds == 0:
		errs = append(errs, &ConfigError{field, "needs http, exec or openclaw"})
	case t.HTTP != nil:
		errs = append(errs, checkURL(field+".http.url", t.HTTP.URL)...)
		if strings.TrimSpace(t.HTTP.Method) == "" {
			errs = append(errs, &ConfigError{field + ".http.method", "is required"})
		}
		errs = append(errs, checkTimeout(field+".http.timeout", t.HTTP.Timeout)...)
	case t.Exec != nil:
		if len(t.Exec.Command) == 0 || t.Exec.Command[0] == "" {
			errs = append(errs, &ConfigError{field + ".exec.command", "is required"})
		}
		errs = append(errs, checkTimeout(field+".exec.timeout", t.Exec.Timeout)...)
	case t.OpenClaw != nil:
		errs = append(errs, checkOpenClaw(field+".openclaw", t.OpenClaw)...)
	}
	return errs
}

// checkTimeout refuses a target timeout that is not positive: the config gives every target
// its default, so a zero here was never meant as "the default".
func checkTimeout(field string, d time.Duration) []error {
	if d <= 0 {
		return []error{&ConfigError{field, "must be positive"}}
	}
	return nil
}

func checkURL(field, raw string) []error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []error{&ConfigError{field, fmt.Sprintf("%q is not an absolute http(s) URL", raw)}}
	}
	return nil
}

// checkOpenClaw never echoes the token.
func checkOpenClaw(field string, o *OpenClawTarget) []error {
	errs := checkURL(field+".url", o.URL)
	if o.Token == "" {
		errs = append(errs, &ConfigError{field + ".token", "is required (the gateway's hooks.token)"})
	}
	return append(errs, checkTimeout(field+".timeout", o.Timeout)...)
}

// Validate reports structural mistakes in c: missing or duplicate agent ids, a target
// naming no kind or both, a bad URL or command. New and UpdateConfig call it.
func (c Config) Validate() error {
	_, err := c.plan(time.UTC)
	return err
}

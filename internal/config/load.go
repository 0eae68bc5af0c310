package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/schedd/schedd/internal/platform"
)

// Load reads the config file at path and parses it (see Parse). A file that cannot be read
// gives a wrapped os error; a bad file gives Errors.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse reads one YAML document strictly: unknown keys, duplicate keys, wrong types, bad
// values, a probe/target/sink/action naming zero or two kinds, and broken references are
// all reported together as Errors, sorted by position, each naming name:line:column and the
// field path. Defaults fill the keys the document does not give; the result passes
// Validate except, possibly, for a missing gateway.command.
//
// Top-level keys starting with "x-" are ignored, as in Compose files: a place to define
// YAML anchors (&name) that the rest of the file uses (*name, or <<: *name to merge).
//
// name is used in messages and as Config.Path. When it is not empty, a relative
// gateway.workdir, state_dir or control.socket is resolved against the directory of name
// (made absolute). Signals are stored canonically ("TERM" becomes "SIGTERM"), HTTP methods
// and sqlite synchronous in upper case, and `liveness: {none: {}}` as no liveness.
func Parse(name string, data []byte) (*Config, error) {
	d := newDecoder(name)
	root := d.document(data)
	if root == nil {
		return nil, d.errs.sorted()
	}
	c := &Config{Path: name}
	d.structValue(root, reflect.ValueOf(c).Elem(), "")
	c.pos = d.pos
	applyDefaults(c)
	c.resolvePaths(name)
	k := &checker{c: c, bad: d.bad}
	k.all()
	if errs := append(d.errs, k.errs...); len(errs) > 0 {
		return nil, errs.sorted()
	}
	c.normalize()
	return c, nil
}

// resolvePaths makes relative file paths relative to the config file's directory.
func (c *Config) resolvePaths(name string) {
	if name == "" {
		return
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return
	}
	for _, p := range []*string{&c.Gateway.Workdir, &c.StateDir, &c.Control.Socket} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// normalize stores values in their canonical form; c has passed the checks.
func (c *Config) normalize() {
	canon := func(s *string) {
		if v, err := platform.CanonicalSignal(*s); err == nil {
			*s = v
		}
	}
	canon(&c.Gateway.Stop.Signal)
	canon(&c.Restart.Signal)
	if l := c.Gateway.Liveness; l != nil && l.Kind() == ProbeNone {
		c.Gateway.Liveness = nil
	}
	if s := c.Deliveries.Store.SQLite; s != nil {
		s.Synchronous = strings.ToUpper(s.Synchronous)
	}
	upper := func(s *string) { *s = strings.ToUpper(*s) }
	for _, a := range append([]HeartbeatAgent{c.Heartbeat.Defaults}, c.Heartbeat.Agents...) {
		if a.Target != nil && a.Target.HTTP != nil {
			upper(&a.Target.HTTP.Method)
		}
	}
	for _, s := range c.Deliveries.Sinks {
		if s.HTTP != nil {
			upper(&s.HTTP.Method)
		}
	}
	c.cronNormalize()
	normalizeEmpty(reflect.ValueOf(c).Elem())
}

package config

import (
	"errors"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// FuzzParse: Parse never panics; it returns either a config that survives a round trip
// through its own YAML, or Errors whose every entry has a line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		Example(), full, cronFull, cmd, "",
		"gateway:\n  stopp: {}\n",
		"gateway:\n\tcommand: [a]\n",
		"a: b: c\n",
		"gateway: &g\n  command: [x]\n  env: *g\n",
		"x-a: &a {level: info}\nlog: {<<: [*a, *a]}\n",
		"log: {}\n---\nlog: {}\n",
		"deliveries: {max_payload: 1MiB, schedule: [1s, 0]}\n",
		"gateway: {command: [gw], readiness: {notify: , tcp: {address: ':1'}}}\n",
		"cron: {jobs: [{name: a, schedule: '0 7 * * MOX', every: 0, action: {http: }}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if err != nil {
			if c != nil {
				t.Fatal("both a config and an error")
			}
			errs, ok := errors.AsType[Errors](err)
			if !ok || len(errs) == 0 {
				t.Fatalf("error %T %v is not a non-empty Errors", err, err)
			}
			for _, e := range errs {
				if e.Line < 1 || e.Msg == "" || e.File != "f.yaml" {
					t.Fatalf("bad entry %#v", e)
				}
			}
			return
		}
		_ = c.Validate()
		_ = c.Redacted()
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		c2, err := Parse("f.yaml", out)
		if err != nil {
			t.Fatalf("Parse(Marshal(c)): %v\n%s", err, out)
		}
		if diff := diffConfigs(c, c2); diff != "" {
			t.Fatalf("round trip changed:\n%s\n%s", diff, out)
		}
	})
}

// FuzzDuration: the config's durations are Go syntax, never negative, and their text form
// reads back to the same value.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"0", "30s", "1m30s", "-1s", "1d", "30", "1.5h", ".5s", "9223372036854775807ns", "1e3s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		std, stdErr := time.ParseDuration(s)
		switch {
		case err != nil:
			if s == "0" || (stdErr == nil && std >= 0) {
				t.Fatalf("parseDuration(%q) rejected a valid duration: %v", s, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		case d < 0:
			t.Fatalf("parseDuration(%q) = %v, negative", s, d)
		case s != "0" && (stdErr != nil || Duration(std) != d):
			t.Fatalf("parseDuration(%q) = %v, time.ParseDuration = %v, %v", s, d, std, stdErr)
		}
		b, err := d.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Duration
		if err := back.UnmarshalText(b); err != nil || back != d {
			t.Fatalf("%v -> %q -> %v, %v", d, b, back, err)
		}
	})
}

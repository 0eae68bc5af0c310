package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigNotSupportedYet: a config file that sets a feature this version does not have,
// or a metrics endpoint other hosts could reach without metrics.allow_remote, makes both
// `config validate` and `run` exit 78 and name the key with its position, before anything
// starts.
func TestConfigNotSupportedYet(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"metrics beyond this host", "metrics: {listen: 0.0.0.0:9477}\n",
			`:2:19: metrics.listen: "0.0.0.0:9477" is not a loopback address and the endpoint has no authentication`},
		{"postgres lease", "deliveries: {store: {postgres: {dsn: 'postgres://u:sekrit@db/schedd', lease: 0s}}}\n",
			":2:78: deliveries.store.postgres.lease: must be greater than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "schedd.yaml")
			if err := os.WriteFile(path, []byte("gateway: {command: [gw]}\n"+tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"config", "validate", path},
				{"run", "--config", path, "--state-dir", t.TempDir()},
			} {
				var stdout, stderr bytes.Buffer
				if code := Main(args, &stdout, &stderr); code != exitConfig {
					t.Errorf("%s: exit %d, want %d; stderr:\n%s", args[0], code, exitConfig, &stderr)
				}
				if !strings.Contains(stderr.String(), path+tc.want) {
					t.Errorf("%s: stderr lacks %q:\n%s", args[0], path+tc.want, &stderr)
				}
			}
		})
	}
	// Without them, the same file is valid.
	path := filepath.Join(t.TempDir(), "schedd.yaml")
	if err := os.WriteFile(path, []byte("gateway: {command: [gw]}\nmetrics: {listen: 0.0.0.0:9477, allow_remote: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"config", "validate", path}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "valid") {
		t.Errorf("config validate: exit %d, %q %q", code, &stdout, &stderr)
	}
}

//go:build unix

package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestOpenClawExample: the example a new user copies is accepted by `config validate`, the
// openclaw.json fragment says what the example relies on, and docs/openclaw.md explains
// every setting the example uses.
func TestOpenClawExample(t *testing.T) {
	t.Setenv("OPENCLAW_HOOKS_TOKEN", "a-token-for-the-test")
	const cfg = "../../examples/openclaw/schedd.yaml"
	if code, out, errOut := cli("config", "validate", cfg); code != 0 {
		t.Fatalf("config validate %s: exit %d\n%s%s", cfg, code, out, errOut)
	}

	raw, err := os.ReadFile("../../examples/openclaw/openclaw.json")
	if err != nil {
		t.Fatal(err)
	}
	var oc struct {
		Gateway struct {
			Mode string `json:"mode"`
			Auth struct {
				Mode string `json:"mode"`
			} `json:"auth"`
		} `json:"gateway"`
		Hooks struct {
			Enabled         bool     `json:"enabled"`
			Token           string   `json:"token"`
			AllowedAgentIDs []string `json:"allowedAgentIds"`
		} `json:"hooks"`
		Agents struct {
			Defaults struct {
				Heartbeat struct {
					Every string `json:"every"`
				} `json:"heartbeat"`
			} `json:"defaults"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(raw, &oc); err != nil {
		t.Fatalf("openclaw.json: %v", err)
	}
	if oc.Gateway.Mode != "local" || oc.Gateway.Auth.Mode != "none" || !oc.Hooks.Enabled ||
		oc.Hooks.Token == "" || len(oc.Hooks.AllowedAgentIDs) == 0 || oc.Agents.Defaults.Heartbeat.Every != "0m" {
		t.Fatalf("openclaw.json lacks what the example needs: %+v", oc)
	}

	page, err := os.ReadFile("../../docs/openclaw.md")
	if err != nil {
		t.Fatal(err)
	}
	section := markdownSection("\n"+string(page), "# Supervising OpenClaw")
	if section == "" {
		t.Fatal(`docs/openclaw.md has no "# Supervising OpenClaw" title`)
	}
	y, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(y, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range yamlKeys(&doc) {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(key) + `\b`).MatchString(section) {
			t.Errorf("docs/openclaw.md does not explain %q, which the example sets", key)
		}
	}
	for _, why := range []string{"330", "scope: main", "OPENCLAW_NO_RESPAWN", `"none"`, "npm install", "schedd status"} {
		if !strings.Contains(section, why) {
			t.Errorf("docs/openclaw.md does not mention %s", why)
		}
	}
}

// markdownSection is the text under heading, up to the next heading of its level.
func markdownSection(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// yamlKeys lists every mapping key in the document (gateway.env's variable names too).
func yamlKeys(n *yaml.Node) []string {
	var keys []string
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				keys = append(keys, n.Content[i].Value)
				walk(n.Content[i+1])
			}
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return keys
}

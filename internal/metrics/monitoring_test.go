package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/schedd/schedd/internal/api"
)

// monitoringDir holds the alert rules and the Grafana dashboard shipped for Prometheus users.
const monitoringDir = "../../monitoring"

// everySeries returns the names of every schedd_ family the registry serves, each of them
// given at least one series by a status with everything in it and one call of every hook.
func everySeries(t *testing.T) []string {
	t.Helper()
	now := time.Now()
	connected := true
	m := New("v", status(api.Status{
		Gateway:    api.Gateway{State: api.GatewayReady},
		Restart:    &api.Restart{Requests: map[api.RestartSource]int64{"cli": 1}},
		Deliveries: &api.Deliveries{Pending: 1, OldestPendingAt: &now, Connected: &connected},
		Heartbeat:  &api.Heartbeat{Agents: []api.AgentStatus{{ID: "main", NextDueAt: &now}}},
		Cron:       &api.Cron{Jobs: []api.CronJob{{Name: "nightly", ConsecutiveFailures: 2}}},
	}))
	m.Gateway(api.Gateway{State: api.GatewayStarting, StartedAt: now})
	m.Gateway(api.Gateway{State: api.GatewayReady, StartedAt: now, ReadySince: now.Add(time.Second)})
	m.RestartEnded(api.RestartResult{OK: true, Mode: "deferred", DeferredMs: 10, Forced: true, DurationMs: 20})
	m.Pulse("main", api.RunRan)
	m.PulseLate("main", time.Second)
	m.Attempt("webhook", "delivered", "none", time.Second)
	m.DeadLetter("expired")
	m.RecoveryPass(api.RecoverySummary{Scanned: 1, Recovered: 1})
	m.Commit(time.Millisecond, "")
	m.CronEnded("nightly", api.TaskFailed)
	m.CronLate("nightly", time.Second)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "schedd_") {
			names = append(names, f.GetName())
		}
	}
	return names
}

var seriesName = regexp.MustCompile(`\bschedd_[a-z_]+\b`)

// checkNames fails for every schedd_ series an expression names that schedd does not serve
// (a histogram's _bucket, _sum and _count count as the histogram), and returns how many it saw.
func checkNames(t *testing.T, where, expr string, served []string) int {
	t.Helper()
	found := seriesName.FindAllString(expr, -1)
	for _, n := range found {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if s, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(served, s) {
				base = s
			}
		}
		if !slices.Contains(served, base) {
			t.Errorf("%s: %s is not a series schedd serves (%s)", where, n, expr)
		}
	}
	return len(found)
}

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestAlertRules: every alert rule names only series schedd serves, has unit tests in
// schedd-alerts.test.yml and a line in docs/metrics.md; promtool checks the rules and runs
// the unit tests (required in CI, where SCHEDD_REQUIRE_PROMTOOL is set).
func TestAlertRules(t *testing.T) {
	served := everySeries(t)
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "schedd-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("schedd-alerts.yml: %v", err)
	}
	tests, err := os.ReadFile(filepath.Join(monitoringDir, "schedd-alerts.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if checkNames(t, r.Alert, r.Expr, served) == 0 {
				t.Errorf("%s: its expression names no schedd series: %s", r.Alert, r.Expr)
			}
			if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
				t.Errorf("%s has no unit test in schedd-alerts.test.yml", r.Alert)
			}
			if !strings.Contains(string(doc), "`"+r.Alert+"`") {
				t.Errorf("%s is not listed in docs/metrics.md", r.Alert)
			}
		}
	}
	for _, want := range []string{"ScheddGatewayCrashLooping", "ScheddGatewayFailed", "ScheddDeadLettersGrowing",
		"ScheddCronJobFailing", "ScheddHeartbeatLate", "ScheddDeliveryStoreUnavailable"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s in schedd-alerts.yml", want)
		}
	}

	promtool := findPromtool(t)
	if promtool == "" {
		return
	}
	for _, args := range [][]string{{"check", "rules", "schedd-alerts.yml"}, {"test", "rules", "schedd-alerts.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = monitoringDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// findPromtool returns promtool's path, or "" after skipping the promtool part of a test
// where it is not installed; with SCHEDD_REQUIRE_PROMTOOL set its absence fails the test.
func findPromtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/promtool"); err == nil {
		return "/usr/bin/promtool"
	}
	if os.Getenv("SCHEDD_REQUIRE_PROMTOOL") != "" {
		t.Fatal("promtool is not installed (Debian: apt-get install prometheus)")
	}
	t.Log("promtool is not installed: the rules are not checked by it")
	return ""
}

// TestDashboard: the Grafana dashboard is valid JSON whose every query names only series
// schedd serves, and which has a panel for each part of schedd.
func TestDashboard(t *testing.T) {
	served := everySeries(t)
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid")
	}
	seen := map[string]bool{}
	var rows []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkNames(t, p.Title, tg.Expr, served)
			for _, n := range seriesName.FindAllString(tg.Expr, -1) {
				seen[n] = true
			}
		}
	}
	if want := []string{"Gateway", "Heartbeats", "Deliveries", "Cron"}; !slices.Equal(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	for _, n := range []string{"schedd_gateway_state", "schedd_deliveries_queue_depth", "schedd_delivery_dead_letters_total",
		"schedd_cron_runs_total", "schedd_heartbeat_pulses_total"} {
		if !seen[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
}

package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/schedd/schedd/internal/heartbeat"
)

// rangesDoc sets every numeric key of the schema at least once, each where it is allowed
// (a probe's every and failures only in an http liveness probe, say). The values do not
// matter: the tests put their own in their places.
const rangesDoc = `gateway:
  command: [gw]
  readiness: {http: {url: "http://127.0.0.1:1/readyz"}, timeout: 1s}
  liveness: {http: {url: "http://127.0.0.1:1/healthz"}, timeout: 1s, every: 1s, failures: 1}
  stop: {timeout: 1s}
  backoff: {initial: 1s, max: 1s, factor: 1, jitter: 0, reset_after: 1s}
  crash_loop: {failures: 1, window: 1s}
  output: {max_lines_per_second: 1, keep_lines: 1}
  no_restart_exit_codes: [1]
  sockets: [{name: web, listen: "127.0.0.1:1", backlog: 1}]
restart:
  cooldown: 1s
  delay: 1s
  signal_down_wait: 1s
  defer_until_idle:
    idle: {openclaw: {port: 1}, timeout: 1s}
    poll: 2s
    max_wait: 2s
heartbeat:
  defaults:
    every: 1m
    target: {http: {url: "http://127.0.0.1:1/hooks/wake", timeout: 1s}}
  agents:
    - {id: a, every: 1m, target: {exec: {command: [x], timeout: 1s}}}
    - {id: b, target: {openclaw: {url: "http://127.0.0.1:1/hooks/wake", token: t, timeout: 1s}}}
deliveries:
  store: {postgres: {dsn: "host=db", lease: 1s, max_conns: 1}}
  max_retries: 1
  schedule: [1s, 1s]
  jitter: 0
  max_payload: 1
  max_entries: 1
  recovery_budget: 1s
  replay_spacing: 1s
  max_retry_after: 1s
  workers: 1
  ttl: 1s
  delivered_retention: 1s
  dead_retention: 1s
  sinks:
    h: {http: {url: "http://127.0.0.1:1/h", timeout: 1s}}
    e: {exec: {command: [x], timeout: 1s, transient_codes: [75]}}
    g: {gateway: {path: /g, timeout: 1s}}
    o: {openclaw: {url: "http://127.0.0.1:1/hooks/agent", token: t, timeout: 1s}}
cron:
  workers: 1
  queue_size: 1
  jobs:
    - name: j
      every: 1s
      jitter: 1s
      starting_deadline: 1s
      retry: {max: 1, schedule: [1s]}
      disable_after: 1
      history_limit: 1
      priority: 1
      timeout: 1s
      action: {exec: {command: [x], timeout: 1s}}
    - {name: k, every: 1s, action: {http: {url: "http://127.0.0.1:1/c", timeout: 1s}}}
control: {max_body: 1, request_timeout: 1s}
`

// numNode is one numeric value of a document: its key ("Type.key"), its path and its node.
type numNode struct {
	key, path string
	kind      int
	n         *yaml.Node
}

// numericNodes lists the numeric values of document n, walking it along type t.
func numericNodes(n *yaml.Node, t reflect.Type, path string, out *[]numNode) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			numericNodes(e, t.Elem(), index(path, i), out)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			numericNodes(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), out)
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		si := infoOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			f, ok := si.byKey[n.Content[i].Value]
			if !ok {
				continue
			}
			sf, v, p := t.Field(f.index), n.Content[i+1], join(path, f.key)
			kind := fieldKind(sf)
			switch {
			case kind == kindNone:
				numericNodes(v, sf.Type, p, out)
			case v.Kind == yaml.SequenceNode && len(v.Content) == 0: // the list itself, for its comment
				*out = append(*out, numNode{t.Name() + "." + f.key, p, kind, v})
			case v.Kind == yaml.SequenceNode:
				for j, e := range v.Content {
					*out = append(*out, numNode{t.Name() + "." + f.key, index(p, j), kind, e})
				}
			default:
				*out = append(*out, numNode{t.Name() + "." + f.key, p, kind, v})
			}
		}
	}
}

// numericSchemaKeys lists "Type.key" for every numeric key of every struct type reachable
// from Config, found by reflection alone.
func numericSchemaKeys() []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for _, f := range infoOf(t).fields {
			sf := t.Field(f.index)
			if fieldKind(sf) != kindNone {
				out = append(out, t.Name()+"."+f.key)
			} else {
				walk(sf.Type)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	slices.Sort(out)
	return out
}

// edit returns src with the values of the nodes in vals replaced, and where each of those
// values starts in the result (line, column). The values must be plain scalars.
func edit(src string, vals map[*yaml.Node]string) (string, map[*yaml.Node][2]int) {
	lines := strings.Split(src, "\n")
	byLine := map[int][]*yaml.Node{}
	for n := range vals {
		byLine[n.Line] = append(byLine[n.Line], n)
	}
	at := map[*yaml.Node][2]int{}
	for line, ns := range byLine {
		slices.SortFunc(ns, func(a, b *yaml.Node) int { return a.Column - b.Column })
		l, shift := lines[line-1], 0
		for _, n := range ns {
			start := n.Column - 1 + shift
			l = l[:start] + vals[n] + l[start+len(n.Value):]
			at[n] = [2]int{line, n.Column + shift}
			shift += len(vals[n]) - len(n.Value)
		}
		lines[line-1] = l
	}
	return strings.Join(lines, "\n"), at
}

// past returns the text of the value one step past key's maximum (up) or minimum.
func past(t *testing.T, key string, kind int, up bool) string {
	t.Helper()
	l := limits[key]
	step := int64(-1)
	if up {
		step = 1
	}
	switch kind {
	case kindFloat:
		if up {
			return strconv.FormatFloat(l.fhi+1, 'g', -1, 64)
		}
		return strconv.FormatFloat(l.flo-1, 'g', -1, 64)
	case kindDuration:
		n := l.lo - 1
		if up {
			n = l.hi + 1
		}
		return time.Duration(n).String()
	case kindInterval:
		if up {
			return heartbeat.FormatEvery(time.Duration(l.hi) + time.Millisecond)
		}
		return "-1ms"
	}
	if up {
		return strconv.FormatInt(l.hi+step, 10)
	}
	return strconv.FormatInt(l.lo+step, 10)
}

// TestEveryNumberHasARange_RINPUT02: every numeric key of the schema (found by reflection,
// so a key added later without a range fails here) has a range. A document with every
// numeric key at its maximum at once parses and validates; one step past the maximum, or
// below the minimum, of any one of them is an error naming file:line:column and the key.
func TestEveryNumberHasARange_RINPUT02(t *testing.T) {
	keys := numericSchemaKeys()
	if len(keys) < 50 {
		t.Fatalf("the schema walk found only %d numeric keys; is it broken?", len(keys))
	}
	for _, k := range keys {
		if _, ok := limits[k]; !ok {
			t.Errorf("numeric key %s has no range in limits", k)
		}
	}
	for k := range limits {
		if !slices.Contains(keys, k) {
			t.Errorf("limits has %s, which is not a numeric key of the schema", k)
		}
	}

	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(rangesDoc), &doc); err != nil {
		t.Fatal(err)
	}
	var nodes []numNode
	numericNodes(doc.Content[0], reflect.TypeFor[Config](), "", &nodes)
	covered := map[string]bool{}
	for _, n := range nodes {
		covered[n.key] = true
	}
	for _, k := range keys {
		if !covered[k] {
			t.Errorf("rangesDoc does not set %s", k)
		}
	}

	maxima := map[*yaml.Node]string{}
	for _, n := range nodes {
		_, hi := limitText(n.key)
		maxima[n.n] = hi
	}
	atMax, _ := edit(rangesDoc, maxima)
	c, err := Parse("f.yaml", []byte(atMax))
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatalf("every key at its maximum:\n%v\n%s", err, atMax)
	}

	for _, n := range nodes {
		for _, up := range []bool{true, false} {
			vals := maps.Clone(maxima)
			vals[n.n] = past(t, n.key, n.kind, up)
			src, at := edit(rangesDoc, vals)
			_, err := Parse("f.yaml", []byte(src))
			errs, _ := errors.AsType[Errors](err)
			want := fmt.Sprintf("f.yaml:%d:%d: %s: ", at[n.n][0], at[n.n][1], n.path)
			found := false
			for _, e := range errs {
				_, hi := limitText(n.key)
				if strings.HasPrefix(e.Error(), want) && (!up || strings.Contains(e.Msg, hi)) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s = %s (%s its range): want an error %q%s, got:\n%v", n.path, vals[n.n],
					map[bool]string{true: "above", false: "below"}[up], want, map[bool]string{true: " naming the maximum"}[up], err)
			}
		}
	}
}

// TestExampleShowsEveryRange is the documentation half of R-INPUT-02: in `schedd config
// example`, the comment of every numeric key (on its line, or on the comment lines that
// continue it) gives its maximum, at one place at least where the key appears.
func TestExampleShowsEveryRange(t *testing.T) {
	src := uncomment(Example())
	lines := strings.Split(src, "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	var nodes []numNode
	numericNodes(doc.Content[0], reflect.TypeFor[Config](), "", &nodes)
	shown := map[string]bool{}
	for _, n := range nodes {
		_, hi := limitText(n.key)
		// The comment of the value's line and of the comment-only lines after it.
		text := lines[n.n.Line-1]
		if i := strings.Index(text, " #"); i >= 0 {
			text = text[i:]
		}
		for _, l := range lines[n.n.Line:] {
			if tl := strings.TrimLeft(l, " #"); !strings.HasPrefix(strings.TrimSpace(l), "#") || len(l)-len(tl) < 20 {
				break
			}
			text += " " + l
		}
		if regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(hi) + `($|[^0-9.])`).MatchString(text) {
			shown[n.key] = true
		}
	}
	for _, k := range numericSchemaKeys() {
		if _, hi := limitText(k); !shown[k] {
			t.Errorf("the example does not give the maximum of %s (%s) in its comment", k, hi)
		}
	}
}

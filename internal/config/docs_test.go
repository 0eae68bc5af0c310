package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// configDoc is the reference of every key, checked against the schema here.
var configDoc = filepath.Join("..", "..", "docs", "configuration.md")

// docKey is one key of the schema as docs/configuration.md names it.
type docKey struct {
	typeKey string // "Type.key", the form of limits and Ranges
	kind    int    // numeric kind; kindNone for the others
	leaf    bool   // a value, not a section
}

// docKeys lists every key of the schema as a dotted path, list items as [] and map keys as
// NAME ("deliveries.sinks.NAME.http.url", "cron.jobs[].schedule"). A kind without keys
// (notify: {}), a list of values and a map of values are values. A type nested in itself
// (visibility: channels, accounts) is followed at most twice.
func docKeys() map[string]docKey {
	out := map[string]docKey{}
	depth := map[reflect.Type]int{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		depth[t]++
		defer func() { depth[t]-- }()
		for _, f := range infoOf(t).fields {
			sf := t.Field(f.index)
			p := join(path, f.key)
			key := docKey{typeKey: t.Name() + "." + f.key, kind: fieldKind(sf)}
			ft := sf.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			sub, elem := "", ft
			switch {
			case key.kind != kindNone:
			case ft.Kind() == reflect.Struct && len(infoOf(ft).fields) > 0:
				sub = p
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				sub, elem = p+"[]", ft.Elem()
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				sub, elem = p+".NAME", ft.Elem()
			}
			if sub != "" && depth[elem] >= 2 {
				continue
			}
			key.leaf = sub == ""
			out[p] = key
			if sub != "" {
				walk(elem, sub)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}

// refusedKeys are paths the schema has but Validate refuses wherever they are set (a kind
// or key a probe's role does not allow, a key not supported yet): the doc leaves them out.
// Each comes with a file that sets it, and the test checks that it is refused.
var refusedKeys = []struct{ path, yaml string }{
	{"control.group", "control: {group: staff}"},
	{"heartbeat.defaults.id", "heartbeat: {defaults: {id: a}}"},
	{"heartbeat.defaults.visibility.channels.NAME.accounts.NAME.channels",
		"heartbeat: {defaults: {visibility: {channels: {t: {accounts: {w: {channels: {x: {show_ok: true}}}}}}}}}"},
	{"heartbeat.agents[].visibility.channels.NAME.accounts.NAME.channels",
		"heartbeat: {agents: [{id: a, visibility: {channels: {t: {accounts: {w: {channels: {x: {show_ok: true}}}}}}}}]}"},
	{"gateway.readiness.openclaw", "gateway: {readiness: {openclaw: {port: 1}}}"},
	{"gateway.readiness.every", "gateway: {readiness: {none: {}, every: 1s}}"},
	{"gateway.readiness.failures", "gateway: {readiness: {none: {}, failures: 1}}"},
	{"gateway.readiness.http.inflight_pointer", "gateway: {readiness: {http: {url: 'http://h/', inflight_pointer: /n}}}"},
	{"gateway.liveness.tcp", "gateway: {liveness: {tcp: {address: 'h:1'}}}"},
	{"gateway.liveness.openclaw", "gateway: {liveness: {openclaw: {port: 1}}}"},
	{"gateway.liveness.http.inflight_pointer", "gateway: {liveness: {http: {url: 'http://h/', inflight_pointer: /n}}}"},
	{"restart.defer_until_idle.idle.tcp", "restart: {defer_until_idle: {idle: {tcp: {address: 'h:1'}}}}"},
	{"restart.defer_until_idle.idle.none", "restart: {defer_until_idle: {idle: {none: {}}}}"},
	{"restart.defer_until_idle.idle.every", "restart: {defer_until_idle: {idle: {notify: {}, every: 1s}}}"},
	{"restart.defer_until_idle.idle.failures", "restart: {defer_until_idle: {idle: {notify: {}, failures: 1}}}"},
	{"restart.defer_until_idle.idle.http.json_pointer",
		"restart: {defer_until_idle: {idle: {http: {url: 'http://h/', inflight_pointer: /n, json_pointer: /x}}}}"},
}

func refused(path string) bool {
	for _, r := range refusedKeys {
		if path == r.path || strings.HasPrefix(path, r.path+".") {
			return true
		}
	}
	return false
}

// docPath turns a path of an error ("heartbeat.agents[0].id", "deliveries.sinks.x.url")
// into the doc's form for comparing prefixes: list indexes become [].
func docPath(p string) string {
	return regexp.MustCompile(`\[\d+\]`).ReplaceAllString(p, "[]")
}

func TestRefusedKeysAreRefused(t *testing.T) {
	keys := docKeys()
	for _, r := range refusedKeys {
		if _, ok := keys[r.path]; !ok {
			t.Errorf("refused key %s is not in the schema", r.path)
			continue
		}
		doc := "gateway: {command: [gw]}\n" + r.yaml + "\n"
		if strings.HasPrefix(r.yaml, "gateway: {") {
			doc = strings.Replace(r.yaml, "gateway: {", "gateway: {command: [gw], ", 1) + "\n"
		}
		_, err := Parse("schedd.yaml", []byte(doc))
		var errs Errors
		if !errors.As(err, &errs) {
			t.Errorf("%s: a file that sets it is accepted (err %v)", r.path, err)
			continue
		}
		found := false
		for _, e := range errs {
			p := docPath(e.Field)
			for _, seg := range []string{".t.", ".w.", ".x."} { // the map keys of the samples
				p = strings.ReplaceAll(p, seg, ".NAME.")
			}
			if p == r.path || strings.HasPrefix(p, r.path+".") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: refused, but not for that key: %v", r.path, err)
		}
	}
}

// docRow is one row of a key table of docs/configuration.md.
type docRow struct {
	line                  int
	key                   string // in docKeys' form
	def, valueRange, mean string
}

var (
	placeholderRE = regexp.MustCompile(`^[A-Z][A-Z_]*$`)
	backtickRE    = regexp.MustCompile("`([^`]*)`")
)

// docRows reads the key tables: rows whose first cell is a key in backticks.
func docRows(t *testing.T) []docRow {
	data, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	var rows []docRow
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
		if len(cells) != 4 {
			t.Errorf("%s:%d: a key row needs 4 cells (key | default | range | meaning), got %d", configDoc, i+1, len(cells))
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		key := strings.Trim(cells[0], "`")
		segs := strings.Split(key, ".")
		for j, s := range segs {
			if placeholderRE.MatchString(s) {
				segs[j] = "NAME"
			}
		}
		rows = append(rows, docRow{line: i + 1, key: strings.Join(segs, "."), def: cells[1], valueRange: cells[2], mean: cells[3]})
	}
	return rows
}

// TestConfigDocCoversSchema: docs/configuration.md names every key of the schema (but the
// refused ones) and no other, each once, with a meaning.
func TestConfigDocCoversSchema(t *testing.T) {
	keys := docKeys()
	leaves := 0
	for _, k := range keys {
		if k.leaf {
			leaves++
		}
	}
	if leaves < 150 {
		t.Fatalf("the schema walk found only %d keys; is it broken?", leaves)
	}
	seen := map[string]int{}
	for _, r := range docRows(t) {
		if prev, dup := seen[r.key]; dup {
			t.Errorf("%s:%d: %s is listed twice (first on line %d)", configDoc, r.line, r.key, prev)
		}
		seen[r.key] = r.line
		if _, ok := keys[r.key]; !ok || refused(r.key) {
			t.Errorf("%s:%d: %s is not a key of the schema", configDoc, r.line, r.key)
		}
		if r.mean == "" {
			t.Errorf("%s:%d: %s has no meaning", configDoc, r.line, r.key)
		}
	}
	var missing []string
	for p, k := range keys {
		if k.leaf && !refused(p) && seen[p] == 0 {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%s does not list these keys:\n  %s", configDoc, strings.Join(missing, "\n  "))
	}
}

// TestConfigDocRanges: the range of every numeric key in docs/configuration.md is the one
// of Ranges(), written `MIN..MAX`.
func TestConfigDocRanges(t *testing.T) {
	ranges := map[string]Range{}
	for _, r := range Ranges() {
		ranges[r.Key] = r
	}
	keys := docKeys()
	for _, r := range docRows(t) {
		k, ok := keys[r.key]
		if !ok || k.kind == kindNone {
			continue
		}
		want, ok := ranges[k.typeKey]
		if !ok {
			t.Errorf("%s: numeric key %s (%s) has no range in limits", r.key, k.typeKey, k.typeKey)
			continue
		}
		if w := "`" + want.Min + ".." + want.Max + "`"; r.valueRange != w {
			t.Errorf("%s:%d: %s: range %q, want %q", configDoc, r.line, r.key, r.valueRange, w)
		}
	}
}

// exampleValues lists the values that document n gives to the keys of the schema, walking
// it along type t, by docKeys' paths.
func exampleValues(n *yaml.Node, t reflect.Type, path string, keys map[string]docKey, out map[string]*yaml.Node) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k, ok := keys[path]; ok && k.leaf {
		if n.Tag != "!!null" {
			out[path] = n
		}
		return
	}
	switch {
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, e := range n.Content {
			exampleValues(e, t.Elem(), path+"[]", keys, out)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			exampleValues(n.Content[i], t.Elem(), path+".NAME", keys, out)
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		si := infoOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := si.byKey[n.Content[i].Value]; ok {
				exampleValues(n.Content[i+1], t.Field(f.index).Type, join(path, f.key), keys, out)
			}
		}
	}
}

// TestConfigDocDefaults: where `schedd config example` gives a key a value (its active
// keys are the defaults), docs/configuration.md gives the same default: the first value in
// backticks in the default cell, read as YAML.
func TestConfigDocDefaults(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(Example()), &doc); err != nil {
		t.Fatal(err)
	}
	values := map[string]*yaml.Node{}
	exampleValues(doc.Content[0], reflect.TypeFor[Config](), "", docKeys(), values)
	if len(values) < 50 {
		t.Fatalf("found only %d values in the example; is the walk broken?", len(values))
	}
	rows := map[string]docRow{}
	for _, r := range docRows(t) {
		rows[r.key] = r
	}
	for path, n := range values {
		r, ok := rows[path]
		if !ok || path == "gateway.command" { // the example's command is an example: none is the default
			continue // a missing row is reported by TestConfigDocCoversSchema
		}
		m := backtickRE.FindStringSubmatch(r.def)
		if m == nil {
			t.Errorf("%s:%d: %s has no default in backticks; the example gives it %s", configDoc, r.line, path, exampleText(n))
			continue
		}
		var got, want any
		if err := yaml.Unmarshal([]byte(m[1]), &got); err != nil {
			t.Errorf("%s:%d: %s: default %s is not YAML: %v", configDoc, r.line, path, m[0], err)
			continue
		}
		if err := n.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:%d: %s: default %s, the example gives %s", configDoc, r.line, path, m[0], exampleText(n))
		}
	}
}

// exampleText is the value n as YAML, without its comments.
func exampleText(n *yaml.Node) string {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	b, _ := yaml.Marshal(&c)
	return strings.TrimSpace(string(b))
}

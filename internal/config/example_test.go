package config

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite testdata/example.yaml from Example()")

// TestGoldenExample pins the text of `schedd config example`. Regenerate with
// go test ./internal/config -run Golden -update
func TestGoldenExample(t *testing.T) {
	golden := filepath.Join("testdata", "example.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(Example()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := Example(); got != string(want) {
		t.Errorf("Example() differs from %s; run go test ./internal/config -run Golden -update and review the diff", golden)
	}
}

func TestExampleParsesAndValidates(t *testing.T) {
	c, err := Parse("schedd.yaml", []byte(Example()))
	if err != nil {
		t.Fatalf("Parse(Example()): %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// Its active keys are exactly the defaults plus a command.
	want := Default()
	want.Gateway.Command = []string{"openclaw", "gateway", "run", "--port", "18789"}
	if diff := diffConfigs(want, c); diff != "" {
		t.Errorf("Example() is not Default() plus a command:\n%s", diff)
	}
}

// uncomment turns the example's "# key: value" lines (and "# - item" lines) into YAML, so
// that the optional settings and alternatives become part of the document. Prose comments
// never start with a lower-case key and a colon.
func uncomment(s string) string {
	re := regexp.MustCompile(`(?m)^(\s*)# ( *)([a-z_]+:( |$)|- )`)
	return re.ReplaceAllString(s, "$1$2$3")
}

// schemaKeys lists "Type.key" for every yaml key of every struct type reachable from t,
// leaving out the keys in skip, what is only reachable through them, and a section none of
// whose keys is left. It reports whether t is a value or a section with a key left.
func schemaKeys(t reflect.Type, skip map[string]bool, seen map[reflect.Type]bool, out map[string]bool) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return schemaKeys(t.Elem(), skip, seen, out)
	case reflect.Struct:
	default:
		return true
	}
	fields := infoOf(t).fields
	if t == durationType || seen[t] || len(fields) == 0 {
		return true
	}
	seen[t] = true
	left := false
	for _, f := range fields {
		key := t.Name() + "." + f.key
		if skip[key] || !schemaKeys(t.Field(f.index).Type, skip, seen, out) {
			continue
		}
		out[key], left = true, true
	}
	return left
}

// notYetKeys lists "Type.key" for the paths of notYet.
func notYetKeys(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, n := range notYet {
		typ := reflect.TypeFor[Config]()
		parts := strings.Split(n.path, ".")
		for i, key := range parts {
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			f, ok := infoOf(typ).byKey[key]
			if !ok {
				t.Fatalf("notYet path %s: no key %s in %s", n.path, key, typ.Name())
			}
			if i == len(parts)-1 {
				out[typ.Name()+"."+key] = true
			}
			typ = typ.Field(f.index).Type
		}
	}
	return out
}

// exampleKeys lists "Type.key" for the keys document n gives, walking it along type t.
func exampleKeys(n *yaml.Node, t reflect.Type, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, e := range n.Content {
			exampleKeys(e, t.Elem(), out)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			exampleKeys(n.Content[i], t.Elem(), out)
		}
	case t.Kind() == reflect.Struct && t != durationType && n.Kind == yaml.MappingNode:
		si := infoOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := si.byKey[n.Content[i].Value]; ok {
				out[t.Name()+"."+f.key] = true
				exampleKeys(n.Content[i+1], t.Field(f.index).Type, out)
			}
		}
	}
}

// TestExampleCoversSchema: every key of every type in the schema appears in the example,
// active or commented out, so the example cannot drift from the schema; the keys not
// supported yet do not appear in it.
func TestExampleCoversSchema(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(uncomment(Example())), &doc); err != nil {
		t.Fatalf("the uncommented example is not YAML: %v", err)
	}
	got := map[string]bool{}
	exampleKeys(doc.Content[0], reflect.TypeFor[Config](), got)
	want := map[string]bool{}
	skip := notYetKeys(t)
	schemaKeys(reflect.TypeFor[Config](), skip, map[reflect.Type]bool{}, want)
	var missing, unsupported []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			unsupported = append(unsupported, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(unsupported)
	if len(missing) > 0 {
		t.Errorf("Example() does not mention these keys (Type.key):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(unsupported) > 0 {
		t.Errorf("Example() shows keys that are not supported yet (Type.key):\n  %s", strings.Join(unsupported, "\n  "))
	}
	if len(want) < 100 {
		t.Errorf("the schema walk found only %d keys; is it broken?", len(want))
	}
}

// TestExampleLinesAreShort keeps the example readable in an 100-column terminal.
func TestExampleLinesAreShort(t *testing.T) {
	for i, l := range strings.Split(Example(), "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("line %d is %d characters long: %s", i+1, n, l)
		}
	}
}

package api_test

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/server"
)

var update = flag.Bool("update", false, "write docs/openapi.yaml from server.Routes")

const openAPIFile = "../../docs/openapi.yaml"

// TestOpenAPI: docs/openapi.yaml is the description that server.Routes and the Go types of the
// requests and replies make, so it cannot drift from them. After a change to either,
// `go test ./internal/api -run TestOpenAPI -update` writes it again.
func TestOpenAPI(t *testing.T) {
	got := openAPIDocument(t)
	if *update {
		if err := os.WriteFile(openAPIFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/openapi.yaml is not what server.Routes and the api types make; run\n" +
			"  go test ./internal/api -run TestOpenAPI -update\nand review the difference")
	}
	var doc map[string]any
	if err := yaml.Unmarshal(want, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi: %v, want 3.1.0", doc["openapi"])
	}
	// Every $ref names a component that is there.
	comps, _ := doc["components"].(map[string]any)
	for _, m := range regexp.MustCompile(`\$ref: '#/components/(\w+)/(\w+)'`).FindAllStringSubmatch(string(want), -1) {
		if group, _ := comps[m[1]].(map[string]any); group[m[2]] == nil {
			t.Errorf("$ref to %s/%s, which is not in components", m[1], m[2])
		}
	}
}

// handlePattern finds the endpoints a server registers: Handle("METHOD /v1/...") and
// HandleLong("METHOD /v1/...").
var handlePattern = regexp.MustCompile(`\.Handle(?:Long)?\("([A-Z]+) (/v1/[^"]*)"`)

// TestRoutesMatchServer: every endpoint the control server registers (anywhere in
// internal/) is in server.Routes, and every route of server.Routes is registered, once.
func TestRoutesMatchServer(t *testing.T) {
	registered := map[string]int{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range handlePattern.FindAllStringSubmatch(string(src), -1) {
			registered[m[1]+" "+m[2]]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, r := range server.Routes {
		key := r.Method + " " + r.Path
		if documented[key] {
			t.Errorf("%s is in server.Routes twice", key)
		}
		documented[key] = true
		if registered[key] == 0 {
			t.Errorf("%s is in server.Routes but no server registers it", key)
		}
	}
	for key, n := range registered {
		if !documented[key] {
			t.Errorf("%s is registered but not in server.Routes (and so not in docs/openapi.yaml)", key)
		}
		if n > 1 {
			t.Errorf("%s is registered %d times", key, n)
		}
	}
	if len(registered) < 20 {
		t.Errorf("found only %d registered endpoints: has the registration changed form?", len(registered))
	}
}

// omap is a YAML mapping that keeps its keys in the order they were set.
type omap struct {
	keys []string
	vals map[string]any
}

func newOmap(kv ...any) *omap {
	m := &omap{vals: map[string]any{}}
	for i := 0; i < len(kv); i += 2 {
		m.set(kv[i].(string), kv[i+1])
	}
	return m
}

func (m *omap) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *omap) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range m.keys {
		var v yaml.Node
		if err := v.Encode(m.vals[k]); err != nil {
			return nil, err
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Value: k}
		if _, err := strconv.Atoi(k); err == nil {
			key.Style = yaml.DoubleQuotedStyle // status codes are strings in OpenAPI
		}
		n.Content = append(n.Content, key, &v)
	}
	return n, nil
}

// schemas turns Go types into JSON Schema components, as encoding/json writes them.
type schemas struct {
	defs map[string]*omap
}

// jsonAs are the types whose JSON is another type's: their MarshalJSON writes that one.
var jsonAs = map[reflect.Type]reflect.Type{
	reflect.TypeFor[api.Gateway](): reflect.TypeFor[api.GatewayJSON](),
}

// enums are the string types with a fixed set of values.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[api.GatewayState](): names(api.GatewayStates),
	reflect.TypeFor[api.ExitReason]():   names(api.ExitReasons),
}

func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func (s *schemas) of(t reflect.Type) any {
	if as, ok := jsonAs[t]; ok {
		name := t.Name()
		if _, done := s.defs[name]; !done {
			s.defs[name] = nil // a placeholder against recursion
			s.defs[name] = s.object(as)
		}
		return newOmap("$ref", "#/components/schemas/"+name)
	}
	switch t {
	case reflect.TypeFor[time.Time]():
		return newOmap("type", "string", "format", "date-time")
	case reflect.TypeFor[time.Duration]():
		return newOmap("type", "integer", "description", "nanoseconds")
	}
	switch t.Kind() {
	case reflect.Pointer:
		return newOmap("oneOf", []any{s.of(t.Elem()), newOmap("type", "null")})
	case reflect.Bool:
		return newOmap("type", "boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return newOmap("type", "integer")
	case reflect.Float32, reflect.Float64:
		return newOmap("type", "number")
	case reflect.String:
		if vs, ok := enums[t]; ok {
			return newOmap("type", "string", "enum", vs)
		}
		return newOmap("type", "string")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return newOmap("type", "string", "contentEncoding", "base64")
		}
		return newOmap("type", []string{"array", "null"}, "items", s.of(t.Elem()))
	case reflect.Map:
		return newOmap("type", []string{"object", "null"}, "additionalProperties", s.of(t.Elem()))
	case reflect.Interface:
		return newOmap()
	case reflect.Struct:
		name := t.Name()
		if name == "" {
			return s.object(t)
		}
		if _, done := s.defs[name]; !done {
			s.defs[name] = nil
			s.defs[name] = s.object(t)
		}
		return newOmap("$ref", "#/components/schemas/"+name)
	}
	panic(fmt.Sprintf("no schema for %v", t))
}

// object is the schema of a struct: its JSON fields (embedded structs' fields inline), and
// which of them are always present (no omitempty).
func (s *schemas) object(t reflect.Type) *omap {
	props := newOmap()
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			props.set(name, s.of(f.Type))
			if !slices.Contains(strings.Split(opts, ","), "omitempty") && !slices.Contains(strings.Split(opts, ","), "omitzero") {
				required = append(required, name)
			}
		}
	}
	walk(t)
	o := newOmap("type", "object", "properties", props)
	if len(required) > 0 {
		o.set("required", required)
	}
	return o
}

func ref(s *schemas, v any) any { return s.of(reflect.TypeOf(v)) }

// openAPIDocument renders server.Routes as an OpenAPI 3.1 document.
func openAPIDocument(t *testing.T) []byte {
	t.Helper()
	s := &schemas{defs: map[string]*omap{}}
	errorReply := newOmap("$ref", "#/components/responses/Error")
	paths := newOmap()
	pathParam := regexp.MustCompile(`\{([a-z_]+)\}`)
	for _, r := range server.Routes {
		op := newOmap("operationId", operationID(r), "summary", r.Summary)
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			typ := "string"
			if m[1] == "id" {
				typ = "integer"
			}
			params = append(params, newOmap("name", m[1], "in", "path", "required", true, "schema", newOmap("type", typ)))
		}
		for _, q := range r.Query {
			params = append(params, newOmap("name", q.Name, "in", "query", "description", q.Description, "schema", newOmap("type", q.Type)))
		}
		if len(params) > 0 {
			op.set("parameters", params)
		}
		if r.Body != nil {
			schema := ref(s, r.Body)
			if r.Alt != nil {
				schema = newOmap("oneOf", []any{schema, ref(s, r.Alt)})
			}
			op.set("requestBody", newOmap("required", false, "content", newOmap("application/json", newOmap("schema", schema))))
		}
		responses := newOmap()
		codes := slices.Sorted(maps.Keys(r.Replies))
		for _, code := range codes {
			content := newOmap("application/json", newOmap("schema", ref(s, r.Replies[code])))
			if r.Stream != nil && code == 200 {
				content.set("application/x-ndjson", newOmap("schema", ref(s, r.Stream)))
			}
			responses.set(strconv.Itoa(code), newOmap("description", "success", "content", content))
		}
		if r.Alt != nil {
			responses.set("200", newOmap("description", "success; for an array, one result per entry", "content",
				newOmap("application/json", newOmap("schema", newOmap("oneOf", []any{ref(s, api.EnqueueReply{}), ref(s, api.BatchReply{})})))))
		}
		errs := append([]int{400, 413, 500}, r.Errors...)
		slices.Sort(errs)
		for _, code := range slices.Compact(errs) {
			responses.set(strconv.Itoa(code), errorReply)
		}
		op.set("responses", responses)
		item, ok := paths.vals[r.Path].(*omap)
		if !ok {
			item = newOmap()
			paths.set(r.Path, item)
		}
		item.set(strings.ToLower(r.Method), op)
	}
	ref(s, api.ErrorBody{})
	components := newOmap()
	for _, name := range slices.Sorted(maps.Keys(s.defs)) {
		components.set(name, s.defs[name])
	}
	doc := newOmap(
		"openapi", "3.1.0",
		"info", newOmap("title", "schedd control API", "version", "1",
			"description", "HTTP/1.1 and JSON over schedd's owner-only control socket (curl --unix-socket PATH http://schedd/v1/status). "+
				"Every error has the shape {\"error\": {\"code\", \"message\"}}; the message names the field or the request at fault."),
		"servers", []any{newOmap("url", "http://schedd", "description", "the control socket (any host name; the socket is the address)")},
		// No credentials: only the socket's owner (and root) can connect to it.
		"security", []any{},
		"paths", paths,
		"components", newOmap(
			"responses", newOmap("Error", newOmap("description", "an error: code and message, the message naming the field or the request at fault",
				"content", newOmap("application/json", newOmap("schema", ref(s, api.ErrorBody{}))))),
			"schemas", components),
	)
	var buf bytes.Buffer
	buf.WriteString("# The control API of schedd. Made from the route table of internal/server (Routes) and\n" +
		"# the request and reply types of internal/api by `go test ./internal/api -run TestOpenAPI\n" +
		"# -update`; edit those, not this file.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// operationID is a route's name: its method and its path's words, getDeliveriesId.
func operationID(r server.Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, part := range strings.Split(strings.TrimPrefix(r.Path, "/v1/"), "/") {
		part = strings.Trim(part, "{}")
		for _, w := range strings.Split(part, "_") {
			if w != "" {
				b.WriteString(strings.ToUpper(w[:1]) + w[1:])
			}
		}
	}
	return b.String()
}

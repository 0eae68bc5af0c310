package config

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds what alias expansion may add to the file's own nodes in one decode, so that
// it ("billion laughs") cannot make Parse slow. The file's own nodes are not bounded: a
// config with 10,000 cron jobs has over 100,000.
const maxNodes = 100_000

// decoder turns a yaml.Node tree into a Config by walking it along the Go types (their yaml
// tags), so that every problem gets the line and column of the node it is about.
type decoder struct {
	file   string
	errs   Errors
	pos    map[string]position
	bad    map[string]bool // paths whose value failed to decode; checks skip them
	budget int
	active map[*yaml.Node]bool // collections being decoded: an alias to one is a cycle
}

func newDecoder(file string) *decoder {
	return &decoder{
		file:   file,
		pos:    map[string]position{},
		bad:    map[string]bool{},
		budget: maxNodes,
		active: map[*yaml.Node]bool{},
	}
}

func (d *decoder) errAt(line, col int, field, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// errNode reports a problem with the value at n and marks its path bad.
func (d *decoder) errNode(n *yaml.Node, field, format string, args ...any) {
	d.bad[field] = true
	d.errAt(n.Line, n.Column, field, format, args...)
}

var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// document parses data as exactly one YAML document holding a mapping. It returns nil after
// recording the errors when that fails.
func (d *decoder) document(data []byte) *yaml.Node {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		line, col := lineCol(data, i)
		d.errAt(line, col, "", "invalid UTF-8 (the file must be UTF-8 text)")
		return nil
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	err := safeDecode(dec, &doc)
	if errors.Is(err, io.EOF) {
		d.errAt(1, 1, "", "empty config file (see `schedd config example`)")
		return nil
	}
	if err != nil {
		d.syntaxError(data, err)
		return nil
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		at := &doc
		if len(doc.Content) > 0 {
			at = doc.Content[0]
		}
		d.errAt(max(at.Line, 1), max(at.Column, 1), "", "empty config file (see `schedd config example`)")
		return nil
	}
	var next yaml.Node
	switch err := safeDecode(dec, &next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(data, err)
		return nil
	default:
		d.errAt(max(next.Line, 1), max(next.Column, 1), "", "a second YAML document (---) is not allowed")
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		d.errAt(root.Line, root.Column, "", "expected a mapping at the top level, got %s", describe(root, false))
		return nil
	}
	d.budget += countNodes(root)
	return root
}

// countNodes counts the nodes of the tree at n as written, without following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, m := range n.Content {
		c += countNodes(m)
	}
	return c
}

// safeDecode decodes the next document, turning a parser panic into an error.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: internal parser error: %v", r)
		}
	}()
	return dec.Decode(n)
}

// syntaxError records a YAML syntax error. yaml.v3 reports a line for most errors and never
// a column; tabs and control characters are located here, and a line-less error is placed at
// the first line whose prefix of the file fails the same way.
func (d *decoder) syntaxError(data []byte, err error) {
	if d.tabErrors(data) {
		return
	}
	msg := err.Error()
	if m := yamlLineRE().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		d.errAt(max(line, 1), 0, "", "invalid YAML: %s", m[2])
		return
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if i := firstNonPrintable(data); i >= 0 {
		line, col := lineCol(data, i)
		d.errAt(line, col, "", "invalid YAML: %s", msg)
		return
	}
	d.errAt(prefixErrorLine(data, err.Error()), 0, "", "invalid YAML: %s", msg)
}

// tabErrors reports every line indented with a tab; it returns false when there is none.
func (d *decoder) tabErrors(data []byte) bool {
	found := false
	for i, line := range strings.Split(string(data), "\n") {
		for j, r := range []rune(line) {
			if r == '\t' {
				d.errAt(i+1, j+1, "", "tab character in indentation (indent with spaces)")
				found = true
				break
			}
			if r != ' ' {
				break
			}
		}
	}
	return found
}

// firstNonPrintable returns the byte offset of the first character YAML does not allow, or -1.
func firstNonPrintable(data []byte) int {
	for i, r := range string(data) {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || r == 0x85 || r == 0xFEFF:
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return i
		case r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			return i
		}
	}
	return -1
}

// prefixErrorLine finds the first line n such that lines 1..n fail to parse with the same
// message; 1 when there is none (or the file is too long to search).
func prefixErrorLine(data []byte, msg string) int {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 2000 {
		return 1
	}
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(l)
		dec := yaml.NewDecoder(strings.NewReader(b.String()))
		for {
			var n yaml.Node
			err := safeDecode(dec, &n)
			if err == nil {
				continue
			}
			if err.Error() == msg {
				return i + 1
			}
			break
		}
	}
	return 1
}

// lineCol converts a byte offset into a 1-based line and column (in characters).
func lineCol(data []byte, off int) (int, int) {
	line, start := 1, 0
	for i := 0; i < off && i < len(data); i++ {
		if data[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, utf8.RuneCount(data[start:min(off, len(data))]) + 1
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names a node for "got ..." in a message. secret hides scalar values.
func describe(n *yaml.Node, secret bool) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if isNull(n) {
		return "null"
	}
	if secret {
		return "a value (value hidden)"
	}
	return quote(n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// resolve follows an alias. It returns nil (after reporting) for an alias to a node that is
// being decoded, which would expand into itself.
func (d *decoder) resolve(n *yaml.Node, field string) *yaml.Node {
	if n.Kind != yaml.AliasNode {
		return n
	}
	t := n.Alias
	if t == nil {
		d.errNode(n, field, "alias *%s refers to nothing", n.Value)
		return nil
	}
	if d.active[t] {
		d.errNode(n, field, "alias *%s refers to a node that contains it", n.Value)
		return nil
	}
	return t
}

// enter marks a collection node as being decoded until the returned func is called.
func (d *decoder) enter(n *yaml.Node) func() {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return func() {}
	}
	d.active[n] = true
	return func() { delete(d.active, n) }
}

// spend counts one node against the budget; false means stop.
func (d *decoder) spend(n *yaml.Node, field string) bool {
	d.budget--
	if d.budget == -1 {
		d.errNode(n, field, "too many nodes after alias expansion (more than %d)", maxNodes)
	}
	return d.budget >= 0
}

type pair struct{ k, v *yaml.Node }

// pairs returns the entries of mapping n: its own keys first, then keys from merges (<<)
// that it does not set itself. Duplicate and non-string keys are reported.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	var out, merged []pair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.spend(k, path) {
			return out
		}
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, d.mergePairs(v, path)...)
			continue
		}
		rk := d.resolve(k, path)
		if rk == nil {
			continue
		}
		if rk.Kind != yaml.ScalarNode {
			d.errNode(k, path, "a key must be a string, got %s", describe(rk, false))
			continue
		}
		if first, dup := seen[rk.Value]; dup {
			d.errAt(k.Line, k.Column, join(path, rk.Value), "duplicate key (first defined at %d:%d)", first.Line, first.Column)
			continue
		}
		seen[rk.Value] = k
		out = append(out, pair{rk, v})
	}
	for _, p := range merged {
		if _, ok := seen[p.k.Value]; ok {
			continue
		}
		seen[p.k.Value] = p.k
		out = append(out, p)
	}
	return out
}

// mergePairs returns the entries a merge key's value brings: a mapping, or a list of
// mappings where earlier ones win.
func (d *decoder) mergePairs(v *yaml.Node, path string) []pair {
	rv := d.resolve(v, path)
	if rv == nil {
		return nil
	}
	defer d.enter(rv)()
	var srcs []*yaml.Node
	switch rv.Kind {
	case yaml.MappingNode:
		srcs = []*yaml.Node{rv}
	case yaml.SequenceNode:
		srcs = rv.Content
	default:
		d.errNode(v, path, "a merge (<<) needs a mapping or a list of mappings, got %s", describe(rv, false))
		return nil
	}
	var out []pair
	seen := map[string]bool{}
	for _, s := range srcs {
		rs := d.resolve(s, path)
		if rs == nil {
			continue
		}
		if rs.Kind != yaml.MappingNode {
			d.errNode(s, path, "a merge (<<) needs a mapping or a list of mappings, got %s", describe(rs, false))
			continue
		}
		leave := d.enter(rs)
		for _, p := range d.pairs(rs, path) {
			if !seen[p.k.Value] {
				seen[p.k.Value] = true
				out = append(out, p)
			}
		}
		leave()
	}
	return out
}

var (
	durationType = reflect.TypeFor[Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
	// unionTypes name exactly one kind; a kind given as null (`notify:`) is present.
	unionTypes = map[reflect.Type]bool{
		reflect.TypeFor[Probe]():      true,
		reflect.TypeFor[Target]():     true,
		reflect.TypeFor[Sink]():       true,
		reflect.TypeFor[Store]():      true,
		reflect.TypeFor[CronAction](): true,
	}
)

var (
	// probeKindTypes are the types under a probe's kind key; timing keys given there
	// belong one level up.
	probeKindTypes = map[reflect.Type]bool{
		reflect.TypeFor[HTTPProbe]():   true,
		reflect.TypeFor[TCPProbe]():    true,
		reflect.TypeFor[ExecProbe]():   true,
		reflect.TypeFor[NotifyProbe](): true,
		reflect.TypeFor[NoneProbe]():   true,
	}
	probeTimingKeys = []string{"timeout", "every", "failures"}
)

// field is one yaml key of a struct.
type field struct {
	key    string
	index  int
	secret bool
}

type structInfo struct {
	fields []field
	byKey  map[string]field
	keys   []string
}

var structInfos sync.Map // reflect.Type -> *structInfo

// infoOf lists the yaml keys of struct type t (exported fields not tagged "-").
func infoOf(t reflect.Type) *structInfo {
	if v, ok := structInfos.Load(t); ok {
		return v.(*structInfo)
	}
	si := &structInfo{byKey: map[string]field{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "-" || key == "" {
			continue
		}
		fl := field{key: key, index: i, secret: f.Tag.Get("schedd") == "secret"}
		si.fields = append(si.fields, fl)
		si.byKey[key] = fl
		si.keys = append(si.keys, key)
	}
	v, _ := structInfos.LoadOrStore(t, si)
	return v.(*structInfo)
}

// field decodes the value n of a struct field or collection element into v, recording its
// position. A null value leaves v untouched (absent), except a kind of a union, which null
// selects.
func (d *decoder) field(n *yaml.Node, v reflect.Value, path string, secret, inUnion bool) {
	rn := d.resolve(n, path)
	if rn == nil {
		return
	}
	if isNull(rn) {
		if inUnion && v.Kind() == reflect.Pointer {
			v.Set(reflect.New(v.Type().Elem()))
			d.pos[path] = positionOf(n)
		}
		return
	}
	d.pos[path] = positionOf(n)
	d.value(rn, v, path, secret)
}

// value decodes the non-null node n (alias resolved) into v.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, secret bool) {
	if !d.spend(n, path) {
		return
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		d.errNode(n, path, "unsupported YAML tag %s", n.Tag)
		return
	}
	defer d.enter(n)()
	switch v.Type() {
	case durationType:
		if n.Kind != yaml.ScalarNode {
			d.errNode(n, path, "expected a duration like 30s, got %s", describe(n, secret))
			return
		}
		dur, err := parseDuration(n.Value)
		if err != nil {
			d.errNode(n, path, "%s", err)
			return
		}
		v.SetInt(int64(dur))
		return
	case byteSizeType:
		if n.Kind != yaml.ScalarNode {
			d.errNode(n, path, "expected a size like 1MiB, got %s", describe(n, secret))
			return
		}
		sz, err := parseByteSize(n.Value)
		if err != nil {
			d.errNode(n, path, "%s", err)
			return
		}
		v.SetInt(int64(sz))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path, secret)
	case reflect.Struct:
		d.structValue(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errNode(n, path, "expected a list, got %s", describe(n, secret))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			d.element(e, s.Index(i), path+"["+strconv.Itoa(i)+"]", secret)
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errNode(n, path, "expected a mapping, got %s", describe(n, secret))
			return
		}
		m := reflect.MakeMap(v.Type())
		for _, p := range d.pairs(n, path) {
			ev := reflect.New(v.Type().Elem()).Elem()
			d.element(p.v, ev, join(path, p.k.Value), secret)
			m.SetMapIndex(reflect.ValueOf(p.k.Value), ev)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.errNode(n, path, "expected a string, got %s", describe(n, secret))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			d.errNode(n, path, "expected true or false, got %s", describe(n, secret))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.errNode(n, path, "expected an integer, got %s", describe(n, secret))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
			d.errNode(n, path, "expected a number, got %s", describe(n, secret))
			return
		}
		v.SetFloat(f)
	default:
		panic("config: no decoder for " + v.Type().String())
	}
}

// element decodes a list element or map value: null gives the zero value.
func (d *decoder) element(n *yaml.Node, v reflect.Value, path string, secret bool) {
	rn := d.resolve(n, path)
	if rn == nil {
		return
	}
	d.pos[path] = positionOf(n)
	if isNull(rn) {
		return
	}
	d.value(rn, v, path, secret)
}

func (d *decoder) structValue(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errNode(n, path, "expected a mapping, got %s", describe(n, false))
		return
	}
	si := infoOf(v.Type())
	union := unionTypes[v.Type()]
	for _, p := range d.pairs(n, path) {
		f, ok := si.byKey[p.k.Value]
		if !ok && path == "" && strings.HasPrefix(p.k.Value, "x-") {
			continue // a top-level extension key: a place for anchors, ignored
		}
		if !ok {
			msg := unknownKeyMsg(p.k.Value, si.keys)
			if probeKindTypes[v.Type()] && slices.Contains(probeTimingKeys, p.k.Value) {
				msg = "unknown key (timing keys go beside the probe kind: " + join(parent(path), p.k.Value) + ")"
			}
			d.errAt(p.k.Line, p.k.Column, join(path, p.k.Value), "%s", msg)
			continue
		}
		d.field(p.v, v.Field(f.index), join(path, f.key), f.secret, union)
	}
}

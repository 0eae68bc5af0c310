package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/server"
)

// TestAPIDocExamples: docs/api.md has a section for every route of server.Routes, and each of its
// examples decodes strictly (no unknown field) into the Go type it stands for: a request
// into the route's body, a reply into the route's reply for that status (or ErrorBody for
// an error), a streamed line into the route's stream type. A field renamed or removed in
// the code fails here until the page says the same.
func TestAPIDocExamples(t *testing.T) {
	raw, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	heading := regexp.MustCompile("(?m)^### `([A-Z]+) (/v1/[^`]*)`$")
	block := regexp.MustCompile("(?ms)^```json (request|reply|stream) ?([0-9]*)\n(.*?)^```$")
	sections := heading.FindAllStringSubmatchIndex(doc, -1)
	seen := map[string]bool{}
	for i, sec := range sections {
		method, path := doc[sec[2]:sec[3]], doc[sec[4]:sec[5]]
		key := method + " " + path
		var route *server.Route
		for j := range server.Routes {
			if server.Routes[j].Method == method && server.Routes[j].Path == path {
				route = &server.Routes[j]
			}
		}
		if route == nil {
			t.Errorf("docs/api.md has a section for %s, which is not a route", key)
			continue
		}
		seen[key] = true
		end := len(doc)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		var replies int
		for _, b := range block.FindAllStringSubmatch(doc[sec[1]:end], -1) {
			kind, status, text := b[1], b[2], b[3]
			var target any
			switch kind {
			case "request":
				target = route.Body
				if strings.HasPrefix(strings.TrimSpace(text), "[") {
					target = route.Alt
				}
			case "stream":
				target = route.Stream
			case "reply":
				replies++
				code, _ := strconv.Atoi(status)
				target = route.Replies[code]
				if code >= 400 {
					target = api.ErrorBody{}
				} else if route.Alt != nil && strings.Contains(text, `"results"`) {
					target = api.BatchReply{}
				}
			}
			if target == nil {
				t.Errorf("%s: a %s %s example, which the route does not have", key, kind, status)
				continue
			}
			strict(t, key+" "+kind+" "+status, text, target)
		}
		if replies == 0 {
			t.Errorf("%s: no reply example", key)
		}
	}
	for _, r := range server.Routes {
		if !seen[r.Method+" "+r.Path] {
			t.Errorf("docs/api.md has no section for %s %s", r.Method, r.Path)
		}
	}
	// The error example of the introduction.
	for _, b := range block.FindAllStringSubmatch(doc[:sections[0][0]], -1) {
		strict(t, "introduction", b[3], api.ErrorBody{})
	}
}

// strict decodes text into a new value of like's type, refusing unknown fields.
func strict(t *testing.T, where, text string, like any) {
	t.Helper()
	v := reflect.New(reflect.TypeOf(like))
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		t.Errorf("%s: the example does not decode into %T: %v\n%s", where, like, err, text)
	}
}

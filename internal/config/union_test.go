package config

import (
	"reflect"
	"slices"
	"testing"
)

// TestUnionKinds: every kind of every union is a pointer field with a YAML key, and Kind
// reports that key when it alone is set, "" when none is, and the first declared when two
// are; the checker lists the set kinds in the same order.
func TestUnionKinds(t *testing.T) {
	unions := []interface{ Kind() string }{Probe{}, Target{}, Store{}, Sink{}, CronAction{}}
	if len(unions) != len(unionTypes) {
		t.Fatalf("%d unions here, %d in unionTypes", len(unions), len(unionTypes))
	}
	for _, u := range unions {
		typ := reflect.TypeOf(u)
		if !unionTypes[typ] {
			t.Errorf("%s is not in unionTypes", typ)
		}
		if got := u.Kind(); got != "" {
			t.Errorf("%s{}.Kind() = %q, want \"\"", typ, got)
		}
		var keys []string
		both := reflect.New(typ).Elem()
		for _, f := range infoOf(typ).fields {
			if typ.Field(f.index).Type.Kind() != reflect.Pointer {
				continue // a setting beside the kinds (a probe's timing)
			}
			keys = append(keys, f.key)
			one := reflect.New(typ).Elem()
			one.Field(f.index).Set(reflect.New(typ.Field(f.index).Type.Elem()))
			if got := one.Interface().(interface{ Kind() string }).Kind(); got != f.key {
				t.Errorf("%s with only %s set: Kind() = %q", typ, f.key, got)
			}
			if len(keys) <= 2 {
				both.Field(f.index).Set(one.Field(f.index))
			}
		}
		if len(keys) < 2 {
			t.Fatalf("%s has %d kinds", typ, len(keys))
		}
		if got := both.Interface().(interface{ Kind() string }).Kind(); got != keys[0] {
			t.Errorf("%s with %s and %s set: Kind() = %q, want the first", typ, keys[0], keys[1], got)
		}
		if got := setKinds(both.Interface()); !slices.Equal(got, keys[:2]) {
			t.Errorf("%s with %s and %s set: setKinds = %q", typ, keys[0], keys[1], got)
		}
	}
}

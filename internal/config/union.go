package config

import "reflect"

// A union (Probe, Target, Store, Sink, CronAction) names its kinds once, as pointer fields
// with their YAML keys: a kind is set when its pointer is not nil, and a valid union sets
// exactly one. Its Kind method and the checker read the kinds from the type, so adding a
// kind is adding a field.

// setKinds lists the kinds union sets, by their YAML keys, in the order its type declares
// them.
func setKinds(union any) []string {
	v := reflect.ValueOf(union)
	var set []string
	for _, f := range infoOf(v.Type()).fields {
		if fv := v.Field(f.index); fv.Kind() == reflect.Pointer && !fv.IsNil() {
			set = append(set, f.key)
		}
	}
	return set
}

// unionKind is the first kind union sets, or "" when it sets none.
func unionKind(union any) string {
	if set := setKinds(union); len(set) > 0 {
		return set[0]
	}
	return ""
}

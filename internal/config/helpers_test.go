package config

import (
	"fmt"
	"reflect"
	"strings"
)

// diffConfigs lists the exported fields where a and b differ (positions and Path ignored).
func diffConfigs(a, b *Config) string {
	var out []string
	diffValues(reflect.ValueOf(*a), reflect.ValueOf(*b), "", &out)
	return strings.Join(out, "\n")
}

func diffValues(a, b reflect.Value, path string, out *[]string) {
	switch a.Kind() {
	case reflect.Struct:
		if a.Type() == reflect.TypeFor[Config]() {
			for i := range a.NumField() {
				f := a.Type().Field(i)
				if f.IsExported() && f.Name != "Path" {
					diffValues(a.Field(i), b.Field(i), path+"."+f.Name, out)
				}
			}
			return
		}
		for i := range a.NumField() {
			diffValues(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, out)
		}
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: %v vs %v", path, show(a), show(b)))
			}
			return
		}
		diffValues(a.Elem(), b.Elem(), path, out)
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: %v vs %v", path, show(a), show(b)))
		}
	}
}

func show(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "nil"
		}
		return v.Elem().Interface()
	}
	return v.Interface()
}

package config

import (
	"net/url"
	"reflect"
)

// RedactedValue is the placeholder Redacted puts in place of a secret.
const RedactedValue = "<redacted>"

// Clone returns a deep copy of c (positions from the file are shared, read-only).
func (c *Config) Clone() *Config {
	out := deepCopy(reflect.ValueOf(c)).Interface().(*Config)
	return out
}

// Redacted returns a deep copy of c that is safe to print: header values, gateway.env
// values and the postgres dsn are replaced by "<redacted>", and passwords in URLs by "xxxxx".
func (c *Config) Redacted() *Config {
	out := c.Clone()
	redact(reflect.ValueOf(out).Elem())
	return out
}

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v) // copies unexported fields too
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				s.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return s
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		return s
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			m.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return m
	}
	return v
}

// redact replaces secrets in v, which must be settable (a deep copy).
func redact(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			redact(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			redact(v.Index(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			redact(e)
			v.SetMapIndex(iter.Key(), e)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			switch f.Tag.Get("schedd") {
			case "secret":
				hide(fv)
				continue
			case "url":
				if u, err := url.Parse(fv.String()); err == nil && u.User != nil {
					fv.SetString(u.Redacted())
				}
				continue
			}
			redact(fv)
		}
	}
}

// hide replaces a secret string, or every value of a map of strings or of string pointers
// (a nil one, a variable removed from the gateway's environment, hides nothing and stays).
func hide(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 {
			v.SetString(RedactedValue)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			switch e := v.MapIndex(k); {
			case e.Kind() != reflect.Pointer:
				v.SetMapIndex(k, reflect.ValueOf(RedactedValue))
			case !e.IsNil():
				s := RedactedValue
				v.SetMapIndex(k, reflect.ValueOf(&s))
			}
		}
	}
}

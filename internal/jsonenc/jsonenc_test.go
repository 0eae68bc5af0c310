package jsonenc

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzRFC3339Nano: the hand formatter writes what time.Time.AppendFormat does, in any
// zone and at any instant.
func FuzzRFC3339Nano(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1777630500), int64(123456789), 0)
	f.Add(int64(1777630500), int64(100000000), 3600)
	f.Add(int64(-62135596800), int64(1), 0)
	f.Add(int64(253402300799), int64(999999999), 0)
	f.Add(int64(253402300800), int64(0), 0)
	f.Fuzz(func(t *testing.T, sec, nsec int64, off int) {
		at := time.Unix(sec, nsec).UTC()
		if off != 0 {
			at = at.In(time.FixedZone("Z", off%(18*3600)))
		}
		if got, want := AppendRFC3339Nano(nil, at), at.AppendFormat(nil, time.RFC3339Nano); string(got) != string(want) {
			t.Fatalf("%v: %s, want %s", at, got, want)
		}
	})
}

// FuzzAppendString: strings are written as encoding/json writes them, byte for byte.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "main", "agent:main:main", "a\"b", "<&>", "tab\t", "\u2028", "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: %s, want x%s", s, got, want)
		}
	})
}

// TestAppendTime: a time as time.Time's MarshalJSON writes it.
func TestAppendTime(t *testing.T) {
	for _, at := range []time.Time{time.Unix(0, 0).UTC(), time.Date(2026, 11, 30, 9, 4, 16, 120000000, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 1, time.FixedZone("CEST", 7200))} {
		want, _ := at.MarshalJSON()
		if got := AppendTime(nil, at); string(got) != string(want) {
			t.Errorf("%v: %s, want %s", at, got, want)
		}
	}
}

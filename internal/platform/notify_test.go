package platform

import (
	"maps"
	"testing"
)

func TestParseNotify(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		truncated bool
		want      map[string]string
	}{
		{"ready", "READY=1", false, map[string]string{"READY": "1"}},
		{"lines", "READY=1\nSTATUS=up: 3 workers\nX_SCHEDD_INFLIGHT=4\n", false,
			map[string]string{"READY": "1", "STATUS": "up: 3 workers", "X_SCHEDD_INFLIGHT": "4"}},
		{"later wins", "STATUS=a\nSTATUS=b", false, map[string]string{"STATUS": "b"}},
		{"value with =", "STATUS=a=b", false, map[string]string{"STATUS": "a=b"}},
		{"empty value", "STATUS=", false, map[string]string{"STATUS": ""}},
		{"malformed ignored", "garbage\n=x\n\nREADY=1\n", false, map[string]string{"READY": "1"}},
		{"empty", "", false, map[string]string{}},
		{"truncated drops partial line", "READY=1\nSTATUS=cut sh", true, map[string]string{"READY": "1"}},
		{"truncated single line", "STATUS=cut", true, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseNotify([]byte(tt.in), tt.truncated); !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzParseNotify(f *testing.F) {
	f.Add([]byte("READY=1\nSTATUS=x\n"), false)
	f.Add([]byte("=\n\n==\nA"), true)
	f.Fuzz(func(t *testing.T, b []byte, truncated bool) {
		for k := range parseNotify(b, truncated) {
			if k == "" {
				t.Fatal("empty key")
			}
		}
	})
}

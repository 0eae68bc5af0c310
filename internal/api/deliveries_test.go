package api

import (
	"strings"
	"testing"
)

// TestKeyProblem_RINPUT03: a key that a sink could not receive as it was given is refused,
// with a message that does not quote it; every other key, up to MaxKeyLen bytes, is fine.
func TestKeyProblem_RINPUT03(t *testing.T) {
	for key, want := range map[string]string{
		"   ":                          "is blank",
		"\u00a0":                       "is blank",
		strings.Repeat("k", 256):       "is 256 bytes long: at most 255",
		"a\nb":                         "control character U+000A at byte 1",
		"a\r":                          "control character U+000D",
		"\x00":                         "control character U+0000",
		"\x1b[31mred":                  "control character U+001B at byte 0",
		"tab\there":                    "control character U+0009",
		"del\x7f":                      "control character U+007F",
		"c1\u0085":                     "control character U+0085",
		"\xff\xfe":                     "is not valid UTF-8",
		" lead":                        "begins or ends with white space",
		"trail ":                       "begins or ends with white space",
		"trail\u3000":                  "begins or ends with white space",
		"":                             "",
		"order-42":                     "",
		"in the middle":                "",
		"ключ:42/😀":                    "",
		strings.Repeat("k", MaxKeyLen): "",
	} {
		got := KeyProblem(key)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("KeyProblem(%q) = %q, want %q", key, got, want)
		}
		if got != "" && len(key) > 1 && strings.Contains(got, key) {
			t.Errorf("KeyProblem(%q) = %q quotes the key", key, got)
		}
	}
}

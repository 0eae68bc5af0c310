package deliveries

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// P7: every upstream permanent pattern, in upstream's exact wording and in case variants,
// classifies an error as permanent.
func TestUpstreamPermanentPatterns_P7(t *testing.T) {
	samples := []string{
		"No conversation reference found for user 42",
		"Bad Request: chat not found",
		"user not found",
		"Forbidden: bot is not a member of the supergroup chat",
		"Forbidden: bot was blocked by the user",
		"Forbidden: bot was kicked from the group chat",
		"Bad Request: chat_id is empty",
		"recipient is not a valid phone number",
		"Outbound not configured for channel matrix",
		"ambiguous discord recipient",
		"User @alice:example.org not in room !abc",
	}
	if len(samples) != len(UpstreamPermanentPatterns) || len(UpstreamPermanentPatterns) != 11 {
		t.Fatalf("%d samples for %d patterns, upstream has 11", len(samples), len(UpstreamPermanentPatterns))
	}
	c, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, msg := range samples {
		pattern := UpstreamPermanentPatterns[i]
		for _, variant := range []string{msg, strings.ToUpper(msg), strings.ToLower(msg), swapCase(msg)} {
			t.Run(fmt.Sprintf("%d/%s", i, variant), func(t *testing.T) {
				v := c.Classify(errors.New(variant))
				if v.Class != Permanent {
					t.Fatalf("%q: class %v, want permanent (pattern %s)", variant, v.Class, pattern)
				}
				if !strings.Contains(v.Reason, pattern) {
					t.Fatalf("reason %q does not name pattern %s", v.Reason, pattern)
				}
				// The pattern matches on transient-typed errors too: the text wins over the HTTP class.
				if v := c.Classify(TransientError(errors.New("HTTP 500: " + variant))); v.Class != Permanent {
					t.Fatalf("transient-typed %q: class %v", variant, v.Class)
				}
			})
		}
	}
}

func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 32
		case 'A' <= c && c <= 'Z':
			b[i] = c + 32
		}
	}
	return string(b)
}

// Near misses stay transient: the patterns are upstream's, not looser.
func TestPermanentPatternsNearMisses(t *testing.T) {
	c, _ := NewClassifier(nil)
	for _, msg := range []string{
		"connection refused",
		"chat found",
		"usernotfound", // no space: upstream's "user not found" needs them
		"member bot not",
		"ambiguous recipient", // upstream needs " .* " between the words
		"User not in room",
		"HTTP 503 Service Unavailable",
	} {
		if v := c.Classify(errors.New(msg)); v.Class != Transient {
			t.Errorf("%q: class %v, want transient", msg, v.Class)
		}
	}
}

func TestClassifyTypedFirst(t *testing.T) {
	c, err := NewClassifier([]string{`(?i)quota exhausted forever`})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want Class
		ra   time.Duration
	}{
		{"typed permanent", &SendError{Class: Permanent, Err: errors.New("HTTP 404"), Status: 404}, Permanent, 0},
		{"typed not ready", NotReadyError(nil), NotReady, 0},
		{"typed not ready, permanent text", NotReadyError(errors.New("chat not found")), NotReady, 0},
		{"typed transient keeps retry-after", &SendError{Class: Transient, Err: errors.New("429"), RetryAfter: time.Minute}, Transient, time.Minute},
		{"wrapped typed", fmt.Errorf("sink: %w", PermanentError(errors.New("x"))), Permanent, 0},
		{"untyped", errors.New("EOF"), Transient, 0},
		{"configured pattern", errors.New("Quota Exhausted Forever"), Permanent, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := c.Classify(tc.err)
			if v.Class != tc.want || v.RetryAfter != tc.ra {
				t.Fatalf("verdict %+v, want class %v retry-after %v", v, tc.want, tc.ra)
			}
		})
	}
	if _, err := NewClassifier([]string{"("}); err == nil {
		t.Fatal("invalid pattern accepted")
	}
}

package heartbeat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidEvery is wrapped by ParseEvery for input outside the grammar.
var ErrInvalidEvery = errors.New("invalid interval")

// ErrEveryOutOfRange is wrapped by ParseEvery, with ErrInvalidEvery, for an interval in the
// grammar that is too large.
var ErrEveryOutOfRange = errors.New("out of range")

// maxEveryMs bounds an interval so it fits a time.Duration with room to spare.
const maxEveryMs = float64(math.MaxInt64/int64(time.Millisecond)) / 2

var unitMs = map[string]float64{
	"ms": 1,
	"s":  1000,
	"m":  60_000,
	"h":  3_600_000,
	"d":  86_400_000,
}

// ParseEvery reads an interval in upstream's grammar: input is trimmed and lowercased;
// one token `N[.F][unit]` where a missing unit means minutes, or several tokens that each
// carry a unit with nothing between them ("1h30m", "2m500ms"). Units are ms, s, m, h, d.
// The total is rounded to the millisecond. "0" parses to 0; callers treat a result <= 0
// or an error as "heartbeat disabled".
func ParseEvery(s string) (time.Duration, error) {
	ms, err := parseDurationMs(s, "m")
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func parseDurationMs(raw, defaultUnit string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrInvalidEvery)
	}
	total := 0.0
	tokens := 0
	for i := 0; i < len(s); {
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return 0, fmt.Errorf("%w %q: expected a number at offset %d", ErrInvalidEvery, raw, start)
		}
		if i < len(s) && s[i] == '.' {
			i++
			frac := i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if i == frac {
				return 0, fmt.Errorf("%w %q: expected digits after '.'", ErrInvalidEvery, raw)
			}
		}
		num := s[start:i]
		unit := ""
		switch {
		case strings.HasPrefix(s[i:], "ms"):
			unit = "ms"
		case i < len(s) && strings.IndexByte("smhd", s[i]) >= 0:
			unit = s[i : i+1]
		}
		i += len(unit)
		tokens++
		if unit == "" {
			// Only a lone token may omit its unit.
			if tokens > 1 || i < len(s) {
				return 0, fmt.Errorf("%w %q: every part of a composite needs a unit", ErrInvalidEvery, raw)
			}
			unit = defaultUnit
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("%w %q: %v", ErrInvalidEvery, raw, err)
		}
		total += v * unitMs[unit]
	}
	ms := math.Round(total)
	if math.IsInf(ms, 0) || math.IsNaN(ms) || ms > maxEveryMs {
		return 0, fmt.Errorf("%w %q: %w", ErrInvalidEvery, raw, ErrEveryOutOfRange)
	}
	return int64(ms), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// FormatEvery writes d (rounded down to the millisecond) in the grammar ParseEvery reads,
// largest units first: 90*time.Minute is "1h30m". Zero and negative durations are "0".
func FormatEvery(d time.Duration) string {
	ms := d.Milliseconds()
	if ms <= 0 {
		return "0"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		ms   int64
	}{{"d", 86_400_000}, {"h", 3_600_000}, {"m", 60_000}, {"s", 1000}, {"ms", 1}} {
		if n := ms / u.ms; n > 0 {
			b.WriteString(strconv.FormatInt(n, 10))
			b.WriteString(u.name)
			ms -= n * u.ms
		}
	}
	return b.String()
}

// resolveInterval reads the agent's (already merged) every, as given: the config always
// gives one (heartbeat.defaults.every defaults there). It returns 0 (disabled) for an
// empty, unparseable or non-positive value, with the parse error so the caller can say
// why.
func resolveInterval(every string) (time.Duration, error) {
	if strings.TrimSpace(every) == "" {
		return 0, nil
	}
	d, err := ParseEvery(every)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, nil
	}
	return d, nil
}

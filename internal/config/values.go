package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes Go syntax ("30s", "1m30s"); a bare 0 is
// allowed. Durations in the config file are never negative.
type Duration time.Duration

// String formats d in Go syntax ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d in Go syntax, so YAML and JSON show "30s" rather than nanoseconds.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads Go syntax or a bare 0; a negative duration is an error.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

var errNegative = errors.New("must not be negative")

// parseDuration reads Go duration syntax or a bare "0". The error text is meant to follow
// "field: " in an Error.
func parseDuration(s string) (Duration, error) {
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, fmt.Errorf("invalid duration %s: a unit is required (use Go syntax like 30s or 1m30s)", quote(s))
		}
		return 0, fmt.Errorf("invalid duration %s (use Go syntax like 30s or 1m30s)", quote(s))
	}
	if v < 0 {
		return 0, fmt.Errorf("%w, got %s", errNegative, s)
	}
	return Duration(v), nil
}

// ByteSize is a size in bytes. The config file takes a plain integer (bytes) or an integer
// with a unit: B, KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024), as in "1MiB"
// or "512 KiB". Units are case-insensitive.
type ByteSize int64

// Bytes returns s as an int64.
func (s ByteSize) Bytes() int64 { return int64(s) }

var sizeUnits = []struct {
	name string
	mult int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// String formats s with the largest binary unit that divides it exactly ("1MiB", "1000").
func (s ByteSize) String() string {
	if s != 0 {
		for _, u := range sizeUnits[:3] {
			if int64(s)%u.mult == 0 {
				return strconv.FormatInt(int64(s)/u.mult, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// MarshalText writes s as String does.
func (s ByteSize) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a plain integer or an integer with a unit; negative sizes are errors.
func (s *ByteSize) UnmarshalText(b []byte) error {
	v, err := parseByteSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

func parseByteSize(in string) (ByteSize, error) {
	bad := fmt.Errorf("invalid size %s (use bytes or a unit, like 1048576, 1MiB or 512KiB)", quote(in))
	s := strings.TrimSpace(in)
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if len(s) > len(u.name) && strings.EqualFold(s[len(s)-len(u.name):], u.name) {
			num, mult = strings.TrimSpace(s[:len(s)-len(u.name)]), u.mult
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "+_") {
		return 0, bad
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("size %s is too large", quote(in))
		}
		return 0, bad
	}
	if n < 0 {
		return 0, fmt.Errorf("%w, got %s", errNegative, in)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %s is too large", quote(in))
	}
	return ByteSize(n * mult), nil
}

// quote quotes s for an error message, shortening long values.
func quote(s string) string {
	const max = 40
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "..."
	}
	return strconv.Quote(s)
}

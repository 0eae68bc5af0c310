package config

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/heartbeat"
)

// Every numeric key of the schema (integers, numbers, durations, sizes, heartbeat
// intervals, in lists too) has a range: limits, keyed "Type.key" (the Go type that holds
// the key and its yaml name). A value past its maximum is refused like any bad value,
// so that no setting can ask for more memory than a host has (a worker count of 10^12)
// or a duration that overflows when it is added to a time. The minimum here is the
// loosest one over the places a type is used; the checks of check.go tighten it where
// the context says more (a probe's every is > 0 for a liveness probe, 0 elsewhere).

// limit is the range of one key: lo and hi for integers, durations and intervals (in
// nanoseconds) and sizes (in bytes); flo and fhi for numbers.
type limit struct {
	lo, hi   int64
	flo, fhi float64
}

func ints(lo, hi int64) limit               { return limit{lo: lo, hi: hi} }
func durs(lo, hi time.Duration) limit       { return limit{lo: int64(lo), hi: int64(hi)} }
func floats(lo, hi float64) limit           { return limit{flo: lo, fhi: hi} }
func sizes(lo, hi ByteSize) limit           { return limit{lo: int64(lo), hi: int64(hi)} }
func positiveDur(hi time.Duration) limit    { return durs(1, hi) } // > 0
func nonNegativeDur(hi time.Duration) limit { return durs(0, hi) }

const (
	day  = 24 * time.Hour
	week = 7 * day
	year = 365 * day
	// MaxBody is the largest control.max_body, and so the largest deliveries.max_payload.
	MaxBody = 64 << 20
)

// limits holds the range of every numeric key; the test walks the schema to check that
// none is missing.
var limits = map[string]limit{
	"Probe.timeout":                 positiveDur(day),
	"Probe.every":                   nonNegativeDur(day),
	"Probe.failures":                ints(0, 1000),
	"OpenClawProbe.port":            ints(0, 65535),
	"Stop.timeout":                  nonNegativeDur(day),
	"Backoff.initial":               positiveDur(day),
	"Backoff.max":                   positiveDur(day),
	"Backoff.factor":                floats(1, 100),
	"Backoff.jitter":                floats(0, 1),
	"Backoff.reset_after":           nonNegativeDur(day),
	"CrashLoop.failures":            ints(1, 1000),
	"CrashLoop.window":              positiveDur(day),
	"Output.keep_lines":             ints(1, MaxKeepLines),
	"Gateway.no_restart_exit_codes": ints(1, 255),
	"Socket.backlog":                ints(0, MaxSocketBacklog), // 0: the system's maximum
	"Output.max_lines_per_second":   ints(1, 1_000_000),

	"Restart.cooldown":         nonNegativeDur(day),
	"Restart.delay":            nonNegativeDur(MaxRestartDelay),
	"Restart.signal_down_wait": nonNegativeDur(time.Hour),
	"DeferUntilIdle.poll":      durs(MinDeferralPoll, time.Hour),
	"DeferUntilIdle.max_wait":  durs(MinDeferralPoll, day),

	"HeartbeatAgent.every": nonNegativeDur(year),
	"HTTPTarget.timeout":   positiveDur(time.Hour),
	"ExecTarget.timeout":   positiveDur(day),
	"OpenClaw.timeout":     positiveDur(time.Hour),

	"PostgresStore.lease":            positiveDur(time.Hour),
	"PostgresStore.max_conns":        ints(1, 1000),
	"Deliveries.max_retries":         ints(0, 1000),
	"Deliveries.schedule":            nonNegativeDur(week),
	"Deliveries.jitter":              floats(0, 1),
	"Deliveries.max_payload":         sizes(1, MaxBody),
	"Deliveries.max_entries":         ints(1, 10_000_000),
	"Deliveries.recovery_budget":     positiveDur(day),
	"Deliveries.replay_spacing":      nonNegativeDur(time.Hour),
	"Deliveries.max_retry_after":     positiveDur(week),
	"Deliveries.workers":             ints(1, 1000),
	"Deliveries.ttl":                 nonNegativeDur(year),
	"Deliveries.delivered_retention": nonNegativeDur(year),
	"Deliveries.dead_retention":      nonNegativeDur(year),
	"HTTPSink.timeout":               positiveDur(time.Hour),
	"ExecSink.timeout":               positiveDur(day),
	"ExecSink.transient_codes":       ints(1, 255),
	"GatewaySink.timeout":            positiveDur(time.Hour),

	"Cron.workers":              ints(1, 1000),
	"Cron.queue_size":           ints(1, 1_000_000),
	"CronJob.every":             nonNegativeDur(year), // at least MinCronEvery when it is the schedule
	"CronJob.jitter":            nonNegativeDur(day),
	"CronJob.starting_deadline": nonNegativeDur(week),
	"CronJob.disable_after":     ints(0, 10_000),
	"CronJob.history_limit":     ints(1, 10_000),
	"CronJob.priority":          ints(-MaxCronPriority, MaxCronPriority),
	"CronJob.timeout":           positiveDur(week),
	"CronRetry.max":             ints(0, 100),
	"CronRetry.schedule":        nonNegativeDur(week),
	"ExecAction.timeout":        nonNegativeDur(week),
	"HTTPAction.timeout":        nonNegativeDur(time.Hour),

	"Control.max_body":        ints(1, MaxBody),
	"Control.request_timeout": positiveDur(time.Hour),
}

// intervalTag marks a string key that holds a heartbeat interval (heartbeat.ParseEvery).
const intervalTag = "interval"

// Range is the range of one numeric key, as the config file writes its values.
type Range struct {
	Key      string // "Type.key": the Go type that holds the key, and the key
	Min, Max string // as YAML values: "1", "30s", "64MiB", "0.5"
}

// Ranges lists the range of every numeric key of the schema, sorted by Key.
func Ranges() []Range {
	out := make([]Range, 0, len(limits))
	for key := range limits {
		lo, hi := limitText(key)
		out = append(out, Range{Key: key, Min: lo, Max: hi})
	}
	slices.SortFunc(out, func(a, b Range) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// limitText formats the bounds of key the way its type is written in the file.
func limitText(key string) (lo, hi string) {
	l := limits[key]
	typ, name, _ := strings.Cut(key, ".")
	switch kindOf(typ, name) {
	case kindFloat:
		return strconv.FormatFloat(l.flo, 'g', -1, 64), strconv.FormatFloat(l.fhi, 'g', -1, 64)
	case kindDuration:
		return durationText(time.Duration(l.lo)), durationText(time.Duration(l.hi))
	case kindInterval:
		return heartbeat.FormatEvery(time.Duration(l.lo)), heartbeat.FormatEvery(time.Duration(l.hi))
	case kindSize:
		return ByteSize(l.lo).String(), ByteSize(l.hi).String()
	}
	return strconv.FormatInt(l.lo, 10), strconv.FormatInt(l.hi, 10)
}

// durationText writes d in Go syntax without zero units at its end: 24h, 1m, 1ns.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// The kinds of numeric values.
const (
	kindNone = iota
	kindInt
	kindFloat
	kindDuration
	kindSize
	kindInterval
)

// schemaTypes maps the name of every struct type of the schema to its type.
var schemaTypes = func() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || out[t.Name()] != nil {
			return
		}
		out[t.Name()] = t
		for _, f := range infoOf(t).fields {
			walk(t.Field(f.index).Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	return out
}()

// kindOf is the numeric kind of key name of the struct type named typ (kindNone when it
// is not numeric, or not in the schema).
func kindOf(typ, name string) int {
	t := schemaTypes[typ]
	if t == nil {
		return kindNone
	}
	f, ok := infoOf(t).byKey[name]
	if !ok {
		return kindNone
	}
	return fieldKind(t.Field(f.index))
}

// fieldKind is the numeric kind of a struct field (of its elements, for a list).
func fieldKind(f reflect.StructField) int {
	if f.Tag.Get("schedd") == intervalTag {
		return kindInterval
	}
	t := f.Type
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return kindDuration
	case t == byteSizeType:
		return kindSize
	case t.Kind() == reflect.Int:
		return kindInt
	case t.Kind() == reflect.Float64:
		return kindFloat
	}
	return kindNone
}

// ranges checks every numeric value against its limit, walking the whole Config. A path
// with a problem reported already (by the checks that know its context) gets no second.
func (k *checker) ranges() {
	done := map[string]bool{}
	for _, e := range k.errs {
		done[e.Field] = true
	}
	k.rangesOf(reflect.ValueOf(k.c).Elem(), "", done)
}

func (k *checker) rangesOf(v reflect.Value, path string, done map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			k.rangesOf(v.Elem(), path, done)
		}
	case reflect.Slice:
		for i := range v.Len() {
			k.rangesOf(v.Index(i), index(path, i), done)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k.rangesOf(iter.Value(), join(path, iter.Key().String()), done)
		}
	case reflect.Struct:
		t := v.Type()
		for _, f := range infoOf(t).fields {
			key, p, fv := t.Name()+"."+f.key, join(path, f.key), v.Field(f.index)
			if l, ok := limits[key]; ok {
				k.inRange(p, key, l, fieldKind(t.Field(f.index)), fv, done)
			} else {
				k.rangesOf(fv, p, done)
			}
		}
	}
}

// inRange checks the value (or the list of values) v of key at path.
func (k *checker) inRange(path, key string, l limit, kind int, v reflect.Value, done map[string]bool) {
	if v.Kind() == reflect.Slice {
		for i := range v.Len() {
			k.inRange(index(path, i), key, l, kind, v.Index(i), done)
		}
		return
	}
	if done[path] {
		return
	}
	lo, hi := limitText(key)
	var got string
	var below, above bool
	switch kind {
	case kindFloat:
		f := v.Float()
		got, below, above = strconv.FormatFloat(f, 'g', -1, 64), f < l.flo, !(f <= l.fhi) // NaN is above
		if math.IsNaN(f) {
			below = false
		}
	case kindInterval:
		s := v.String()
		if s == "" || !everyGrammar(s) {
			return // empty, or reported by agent
		}
		d, err := heartbeat.ParseEvery(s)
		got, below, above = quote(s), err == nil && int64(d) < l.lo, err != nil || int64(d) > l.hi
	default:
		n := v.Int()
		switch kind {
		case kindDuration:
			got = durationText(time.Duration(n))
		case kindSize:
			got = ByteSize(n).String()
		default:
			got = strconv.FormatInt(n, 10)
		}
		below, above = n < l.lo, n > l.hi
	}
	switch {
	case above:
		k.errf(path, "must be at most %s, got %s", hi, got)
	case below:
		k.errf(path, "must be at least %s, got %s", lo, got)
	}
}

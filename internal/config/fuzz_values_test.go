package config

import (
	"errors"
	"strconv"
	"testing"
)

// valueSlots are configs with one scalar left open (%s): numbers, sizes, durations,
// intervals and strings that reach a process, a header or a file name.
var valueSlots = []string{
	"gateway: {command: [%s]}\n",
	"gateway: {command: [gw], output: {keep_lines: %s}}\n",
	"gateway: {command: [gw], env: {A: %s}}\n",
	"gateway: {command: [gw]}\ncontrol: {max_body: %s}\n",
	"gateway: {command: [gw]}\nrestart: {delay: %s}\n",
	"gateway: {command: [gw]}\nrestart: {cooldown: %s, defer_until_idle: {max_wait: %s}}\n",
	"gateway: {command: [gw]}\ndeliveries: {max_payload: %s}\n",
	"gateway: {command: [gw]}\ndeliveries: {max_entries: %s, workers: %s}\n",
	"gateway: {command: [gw]}\ndeliveries: {schedule: [%s], max_retries: %s}\n",
	"gateway: {command: [gw]}\ndeliveries: {sinks: {h: {http: {url: %s, headers: {X-A: %s}}}}}\n",
	"gateway: {command: [gw]}\nheartbeat: {defaults: {every: %s}, agents: [{id: %s}]}\n",
	"gateway: {command: [gw]}\ncron: {jobs: [{name: %s, every: 1h, action: {http: {url: 'http://x/'}}}]}\n",
	"gateway: {command: [gw]}\ncron: {jobs: [{name: j, schedule: %s, timezone: %s, action: {exec: {command: [x]}}}]}\n",
}

// FuzzConfigValues_RINPUT16: any scalar, quoted, at a place where the config takes a
// number, a size, a duration or a string never panics Parse or Validate: the config is
// either taken, and survives a round trip through its YAML, or refused with errors that
// each name a line.
func FuzzConfigValues_RINPUT16(f *testing.F) {
	for _, v := range []string{
		"", " ", "0", "-1", "1", "3", "1e309", "9223372036854775807", "99999999999999999999", "0x10", "1.5",
		"1MiB", "-1KiB", "9EiB", "30s", "-1s", "1h30m", "99999999999d", "2562048h", "1e400h",
		"gw\x00", "a\nb", "\x1b[2J", "\xff", "'", "\"", "*a", "&a x", "${HOME}", "America/New_York", "../../etc",
		"0 7 * * MON", "@every 0s",
	} {
		f.Add(uint8(0), v)
		f.Add(uint8(len(v)), v)
	}
	f.Fuzz(func(t *testing.T, slot uint8, v string) {
		tmpl := valueSlots[int(slot)%len(valueSlots)]
		q := strconv.Quote(v)
		var src []byte
		for i := 0; i < len(tmpl); i++ {
			if tmpl[i] == '%' && i+1 < len(tmpl) && tmpl[i+1] == 's' {
				src = append(src, q...)
				i++
				continue
			}
			src = append(src, tmpl[i])
		}
		c, err := Parse("f.yaml", src)
		if err != nil {
			errs, ok := errors.AsType[Errors](err)
			if c != nil || !ok || len(errs) == 0 {
				t.Fatalf("%s: %v, %T", src, err, err)
			}
			for _, e := range errs {
				if e.Line < 1 || e.Msg == "" {
					t.Fatalf("%s: an error without its line: %#v", src, e)
				}
			}
			return
		}
		_ = c.Validate()
		_ = c.Redacted()
	})
}

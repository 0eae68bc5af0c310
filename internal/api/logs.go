package api

import "time"

// MaxLogLine is the most bytes of one output line the daemon keeps; longer lines are cut
// there (at a UTF-8 boundary) and marked truncated, so the ring's memory stays bounded by
// gateway.output.keep_lines × MaxLogLine.
const MaxLogLine = 4096

// LogLine is one line of the gateway's output, as the daemon keeps it for `schedd logs`.
type LogLine struct {
	// Seq numbers the lines since schedd started (1, 2, ...); a gap between two lines is
	// lines a reader missed.
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`   // when schedd read it
	PID    int       `json:"pid"`    // the gateway process that wrote it
	Stream string    `json:"stream"` // stdout|stderr
	Text   string    `json:"text"`   // without the newline
	// Truncated: the line was longer than MaxLogLine and is cut there.
	Truncated bool `json:"truncated,omitempty"`
	// NotLogged: the line came over gateway.output.max_lines_per_second, so it is only
	// here and not in schedd's own log.
	NotLogged bool `json:"not_logged,omitempty"`
}

// Logs is the reply of GET /v1/logs (without follow): the last n lines, oldest first.
type Logs struct {
	Lines []LogLine `json:"lines"`
	// KeepLines is the size of the ring (gateway.output.keep_lines).
	KeepLines int `json:"keep_lines"`
	// Total counts every line read since schedd started; NotLogged those of them that were
	// over the logging rate cap.
	Total     uint64 `json:"total"`
	NotLogged uint64 `json:"not_logged"`
}

// LogEvent is one line of GET /v1/logs?follow=1, a stream of newline-delimited JSON
// objects (application/x-ndjson): either a line of output or, when this reader fell so
// far behind that the ring dropped lines before it read them, how many it missed.
type LogEvent struct {
	Line   *LogLine `json:"line,omitempty"`
	Missed uint64   `json:"missed,omitempty"`
}

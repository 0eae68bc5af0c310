// Package api is the vocabulary of schedd's control API: the requests, the replies, the
// status document and the error shape, as they travel as JSON. The daemon's features fill
// these types and the CLI reads them; the package imports nothing of schedd's, so a client
// needs nothing else to speak to a daemon. Field names are snake_case and stable.
package api

import "time"

// Status is the reply of GET /v1/status and the output of `schedd status --json`.
type Status struct {
	Schedd  Daemon   `json:"schedd"`
	Gateway Gateway  `json:"gateway"`
	Restart *Restart `json:"restart"`
	// Heartbeat is the heartbeat switch and every configured agent's schedule.
	Heartbeat *Heartbeat `json:"heartbeat"`
	// Deliveries is the durable delivery queue: counts, the last recovery pass, the store.
	Deliveries *Deliveries `json:"deliveries"`
	// Cron is the job queue and every configured cron job: schedule, next run, last result.
	Cron *Cron `json:"cron"`
}

// Daemon describes schedd itself: the `schedd` block of the status.
type Daemon struct {
	PID            int       `json:"pid"`
	Version        string    `json:"version"`
	StartedAt      time.Time `json:"started_at"`
	ServiceManager string    `json:"service_manager"` // systemd|launchd|schtasks|none
	ConfigPath     string    `json:"config_path"`     // "" when running on built-in defaults
	StateDir       string    `json:"state_dir"`
	Socket         string    `json:"socket"`
	Goroutines     int       `json:"goroutines"` // a leak shows here first
}

// ErrorBody is the shape of every error reply: {"error": {"code": "...", "message": "..."}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is one error reply. It is also what the client returns for a non-2xx reply.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message + " (" + e.Code + ")" }

// Error codes.
const (
	CodeBadRequest       = "bad_request"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeTooLarge         = "request_too_large"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
	CodeTimeout          = "timeout"
	CodeConflict         = "conflict"

	CodePayloadTooLarge = "payload_too_large" // 413: a delivery's payload is over deliveries.max_payload
	CodeQueueFull       = "queue_full"        // 503: deliveries.max_entries live entries are stored
	CodeDiskFull        = "disk_full"         // 507: the store's disk is full
	CodeStorage         = "storage_error"     // 500: the store could not commit
)

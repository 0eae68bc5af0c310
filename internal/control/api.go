// Package control is schedd's local control API: HTTP/1.1 and JSON over a unix socket
// that only its owner may use. The daemon serves it; every CLI command is a client of
// exactly this API.
package control

import (
	"time"

	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/recovery"
	"github.com/schedd/schedd/internal/respawn"
	"github.com/schedd/schedd/internal/restart"
)

// Status is the reply of GET /v1/status and the output of `schedd status --json`.
// Field names are snake_case and stable.
type Status struct {
	Schedd  Schedd          `json:"schedd"`
	Gateway respawn.Status  `json:"gateway"`
	Restart *restart.Status `json:"restart"`
	// Heartbeat is the heartbeat switch and every configured agent's schedule.
	Heartbeat *heartbeat.Status `json:"heartbeat"`
	// Deliveries is the durable delivery queue: counts, the last recovery pass, the store.
	Deliveries *recovery.Status `json:"deliveries"`
}

// Schedd describes the daemon itself.
type Schedd struct {
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
	Error APIError `json:"error"`
}

// APIError is one error reply. It is also what the client returns for a non-2xx reply.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string { return e.Message + " (" + e.Code + ")" }

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
)

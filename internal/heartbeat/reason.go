package heartbeat

import "strings"

// ReasonKind classifies a wake reason.
type ReasonKind string

// Reason kinds (upstream heartbeat-reason.ts).
const (
	KindRetry     ReasonKind = "retry"
	KindInterval  ReasonKind = "interval"
	KindManual    ReasonKind = "manual"
	KindExecEvent ReasonKind = "exec-event"
	KindWake      ReasonKind = "wake"
	KindCron      ReasonKind = "cron"
	KindHook      ReasonKind = "hook"
	KindOther     ReasonKind = "other"
)

// Well-known wake reasons.
const (
	ReasonRequested = "requested" // what a blank reason becomes
	ReasonInterval  = "interval"
	ReasonManual    = "manual"
	ReasonRetry     = "retry"
)

// Wake priorities: a pending wake is only replaced by one of higher priority, or of equal
// priority requested at the same time or later.
const (
	PriorityRetry    = 0
	PriorityInterval = 1
	PriorityDefault  = 2
	PriorityAction   = 3
)

// NormalizeReason trims r; a blank reason becomes "requested".
func NormalizeReason(r string) string {
	r = strings.TrimSpace(r)
	if r == "" {
		return ReasonRequested
	}
	return r
}

// KindOf classifies the trimmed reason.
func KindOf(r string) ReasonKind {
	r = strings.TrimSpace(r)
	switch r {
	case "retry":
		return KindRetry
	case "interval":
		return KindInterval
	case "manual":
		return KindManual
	case "exec-event":
		return KindExecEvent
	case "wake", "continuation", "silent-wake-enrichment", "delegate-return":
		return KindWake
	}
	switch {
	case strings.HasPrefix(r, "acp:spawn:"):
		return KindWake
	case strings.HasPrefix(r, "cron:"):
		return KindCron
	case strings.HasPrefix(r, "hook:"):
		return KindHook
	}
	return KindOther
}

// IsEventDriven reports whether r comes from an event (exec-event, cron, wake, hook)
// rather than the schedule or a person.
func IsEventDriven(r string) bool {
	switch KindOf(r) {
	case KindExecEvent, KindCron, KindWake, KindHook:
		return true
	}
	return false
}

// IsAction reports whether r asks for an immediate action (manual, exec-event, hook).
func IsAction(r string) bool {
	switch KindOf(r) {
	case KindManual, KindExecEvent, KindHook:
		return true
	}
	return false
}

// Priority orders reasons for coalescing: retry < interval < everything else < action.
func Priority(r string) int {
	switch KindOf(r) {
	case KindRetry:
		return PriorityRetry
	case KindInterval:
		return PriorityInterval
	}
	if IsAction(r) {
		return PriorityAction
	}
	return PriorityDefault
}

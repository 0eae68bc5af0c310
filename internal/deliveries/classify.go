package deliveries

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Class is how a send error is handled.
type Class int

// The classes of send errors.
const (
	// Transient errors are retried on the schedule until max_retries.
	Transient Class = iota
	// Permanent errors dead-letter the entry at once, charging no further retry.
	Permanent
	// NotReady means the sink cannot take deliveries now (the gateway is not ready): the
	// entry is deferred without charging a retry.
	NotReady
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case NotReady:
		return "not_ready"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// ErrNotReady is the cause of a NotReady send error.
var ErrNotReady = errors.New("sink not ready")

// SendError is a typed sink error. Sinks return it to say how their failure is to be
// handled; an untyped error is classified by its text (see Classifier).
type SendError struct {
	Class Class
	Err   error
	// Status is the HTTP status or exit code behind the error, when there is one.
	Status int
	// RetryAfter is the destination's hint (HTTP Retry-After): the next attempt is not
	// made before it (clamped to Config.RetryAfterMax).
	RetryAfter time.Duration
	// Detail is the destination's own account of a refusal ("HTTP 401: Unauthorized"),
	// quoted in a permanent error's dead-letter reason.
	Detail string
}

func (e *SendError) Error() string {
	if e.Err == nil {
		return e.Class.String() + " send error"
	}
	return e.Err.Error()
}

func (e *SendError) Unwrap() error { return e.Err }

// PermanentError marks err as permanent.
func PermanentError(err error) error { return &SendError{Class: Permanent, Err: err} }

// TransientError marks err as transient.
func TransientError(err error) error { return &SendError{Class: Transient, Err: err} }

// NotReadyError marks err (or ErrNotReady when nil) as a not-ready deferral.
func NotReadyError(err error) error {
	if err == nil {
		err = ErrNotReady
	}
	return &SendError{Class: NotReady, Err: err}
}

// UpstreamPermanentPatterns are the permanent delivery errors of the delivery queue schedd
// replaces (its isPermanentDeliveryError), each case-insensitive, in its order. An error whose text matches
// one is dead-lettered at once.
var UpstreamPermanentPatterns = []string{
	`(?i)no conversation reference found`,
	`(?i)chat not found`,
	`(?i)user not found`,
	`(?i)bot.*not.*member`,
	`(?i)bot was blocked by the user`,
	`(?i)forbidden: bot was kicked`,
	`(?i)chat_id is empty`,
	`(?i)recipient is not a valid`,
	`(?i)outbound not configured for channel`,
	`(?i)ambiguous .* recipient`,
	`(?i)User .* not in room`,
}

// Classifier decides the class of a send error: typed errors first (a SendError's Permanent
// or NotReady class is final), then the permanent patterns on the error text (upstream's
// and the configured ones, so a transient-looking error whose text says "chat not found" is
// still permanent), and transient otherwise.
type Classifier struct {
	patterns []*regexp.Regexp
}

// NewClassifier compiles upstream's patterns plus extra ones (Go regexp syntax; add (?i)
// for case-insensitive matching).
func NewClassifier(extra []string) (*Classifier, error) {
	c := &Classifier{}
	for _, p := range append(append([]string(nil), UpstreamPermanentPatterns...), extra...) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("permanent error pattern %q: %w", p, err)
		}
		c.patterns = append(c.patterns, re)
	}
	return c, nil
}

// Verdict is the classification of one send error.
type Verdict struct {
	Class      Class
	RetryAfter time.Duration
	// Reason says why, for a dead letter: "permanent error (HTTP 404)" or
	// "permanent error (matches /chat not found/)".
	Reason string
}

// Classify returns the verdict for a non-nil send error.
func (c *Classifier) Classify(err error) Verdict {
	var se *SendError
	typed := errors.As(err, &se)
	if typed {
		switch se.Class {
		case NotReady:
			return Verdict{Class: NotReady, Reason: "sink not ready"}
		case Permanent:
			return Verdict{Class: Permanent, Reason: permanentReason(se)}
		}
	}
	text := err.Error()
	for _, re := range c.patterns {
		if re.MatchString(text) {
			return Verdict{Class: Permanent, Reason: fmt.Sprintf("permanent error (matches /%s/)", re.String())}
		}
	}
	v := Verdict{Class: Transient, Reason: "transient error"}
	if typed {
		v.RetryAfter = se.RetryAfter
	}
	return v
}

func permanentReason(se *SendError) string {
	if se.Detail != "" {
		return fmt.Sprintf("permanent error (%s)", se.Detail)
	}
	if se.Status != 0 {
		return fmt.Sprintf("permanent error (status %d)", se.Status)
	}
	return "permanent error"
}

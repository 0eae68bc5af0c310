package outbound

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/platform"
)

// Class is what an outbound call's outcome means for the caller.
type Class uint8

// The classes.
const (
	// Success: the destination has it.
	Success Class = iota
	// Transient: the same call may succeed later; retry it.
	Transient
	// Permanent: sending it again changes nothing (the request or the configuration is
	// wrong).
	Permanent
)

func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case Transient:
		return "transient"
	}
	return "permanent"
}

// Verdict is the classification of one call.
type Verdict struct {
	Class Class
	// Reason says what happened: "HTTP 404 Not Found", "exit status 1", the transport's error.
	Reason string
	// RetryAfter is the destination's Retry-After on a transient reply (0: none).
	RetryAfter time.Duration
}

// ExitTempFail is the exit code (EX_TEMPFAIL) by which a command asks to be run again.
const ExitTempFail = 75

// TransientStatus reports whether an HTTP status asks for a retry: 408, 425, 429 and 5xx.
func TransientStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// Verdict classifies the exchange: 2xx is a success; 408, 425, 429, 5xx, a timeout and
// a failed connection are transient (a transient reply's Retry-After is kept, dated by
// now); a request that could not be built and any other status (redirects included: they
// are not followed) are permanent. A reply whose body could not be read is judged by its
// status.
func (r *Response) Verdict(now time.Time) Verdict {
	switch {
	case r.Fault == FaultRequest:
		return Verdict{Class: Permanent, Reason: r.Err.Error()}
	case !r.Replied():
		return Verdict{Class: Transient, Reason: WithoutURL(r.Err).Error()}
	}
	return StatusVerdict(r.Code, r.Header, now)
}

// StatusVerdict classifies an HTTP reply by its status (see Response.Verdict); header
// holds its Retry-After.
func StatusVerdict(code int, header http.Header, now time.Time) Verdict {
	reason := strings.TrimSpace("HTTP " + strconv.Itoa(code) + " " + http.StatusText(code))
	switch {
	case code >= 200 && code < 300:
		return Verdict{Class: Success, Reason: reason}
	case TransientStatus(code):
		v := Verdict{Class: Transient, Reason: reason}
		v.RetryAfter, _ = backoff.ParseRetryAfter(header.Get("Retry-After"), now)
		return v
	}
	return Verdict{Class: Permanent, Reason: reason}
}

// Verdict classifies the run: exit 0 is a success; exit 75, the codes in transient, an
// end by a signal, a timeout and a runner's error are transient; any other exit code and
// a command that could not be started are permanent.
func (r *Ran) Verdict(transient ...int) Verdict {
	switch r.Fault {
	case NoFault:
	case FaultStart:
		return Verdict{Class: Permanent, Reason: r.Err.Error()}
	default:
		return Verdict{Class: Transient, Reason: r.Err.Error()}
	}
	return ExitVerdict(r.Exit, transient...)
}

// ExitVerdict classifies how a command ended (see Ran.Verdict).
func ExitVerdict(st platform.ExitStatus, transient ...int) Verdict {
	switch {
	case !st.Exited:
		return Verdict{Class: Transient, Reason: st.String()}
	case st.Code == 0:
		return Verdict{Class: Success, Reason: st.String()}
	case st.Code == ExitTempFail || slices.Contains(transient, st.Code):
		return Verdict{Class: Transient, Reason: st.String()}
	}
	return Verdict{Class: Permanent, Reason: st.String()}
}

// OneLine makes captured text safe for one log line: valid UTF-8, runs of white space
// made one space.
func OneLine(b []byte) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
}

// Tail is the last n bytes of b on one line, after ": ", for an error's text; "" when
// there is nothing to show.
func Tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	if s := OneLine(b); s != "" {
		return ": " + s
	}
	return ""
}

package platform

import "strconv"

// ExitStatus is how a process ended (portable).
type ExitStatus struct {
	Exited     bool   // ended by exit(Code)
	Code       int    // exit code when Exited, else -1
	Signaled   bool   // ended by a signal
	Signal     int    // signal number when Signaled
	SignalName string // "SIGKILL", "SIGSEGV", ... when Signaled
	CoreDumped bool
}

// unknownStatus is reported when the wait status could not be read.
var unknownStatus = ExitStatus{Code: -1}

// String describes the status: "exit status 3", "signal SIGKILL (core dumped)".
func (e ExitStatus) String() string {
	switch {
	case e.Exited:
		return "exit status " + strconv.Itoa(e.Code)
	case e.Signaled:
		name := e.SignalName
		if name == "" {
			name = strconv.Itoa(e.Signal)
		}
		if e.CoreDumped {
			return "signal " + name + " (core dumped)"
		}
		return "signal " + name
	default:
		return "unknown exit status"
	}
}

// Stream names one of a child's output streams.
type Stream int

// The output streams of a child.
const (
	Stdout Stream = 1
	Stderr Stream = 2
)

// String returns "stdout" or "stderr".
func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	default:
		return "stream(" + strconv.Itoa(int(s)) + ")"
	}
}

package platform

import "testing"

func TestExitStatusString(t *testing.T) {
	tests := []struct {
		st   ExitStatus
		want string
	}{
		{ExitStatus{Exited: true, Code: 0}, "exit status 0"},
		{ExitStatus{Exited: true, Code: 3}, "exit status 3"},
		{ExitStatus{Code: -1, Signaled: true, Signal: 9, SignalName: "SIGKILL"}, "signal SIGKILL"},
		{ExitStatus{Code: -1, Signaled: true, Signal: 11, SignalName: "SIGSEGV", CoreDumped: true}, "signal SIGSEGV (core dumped)"},
		{ExitStatus{Code: -1, Signaled: true, Signal: 40}, "signal 40"},
		{unknownStatus, "unknown exit status"},
	}
	for _, tt := range tests {
		if got := tt.st.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.st, got, tt.want)
		}
	}
}

func TestStreamString(t *testing.T) {
	if Stdout.String() != "stdout" || Stderr.String() != "stderr" || Stream(7).String() != "stream(7)" {
		t.Errorf("got %q %q %q", Stdout, Stderr, Stream(7))
	}
}

//go:build unix

package platform

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// SdNotifier is tested the go-systemd way: a unixgram listener stands in for systemd.
// t.Setenv rules out t.Parallel.
func TestSdNotifierNotify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "systemd.sock")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	tests := []struct {
		name   string
		socket string
		sent   bool
		err    bool
	}{
		{"no NOTIFY_SOCKET", "", false, false},
		{"listening", path, true, false},
		{"nobody there", filepath.Join(t.TempDir(), "missing.sock"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.socket == "" {
				t.Setenv("NOTIFY_SOCKET", "")
				os.Unsetenv("NOTIFY_SOCKET")
			} else {
				t.Setenv("NOTIFY_SOCKET", tt.socket)
			}
			sent, err := SdNotifier{}.Notify("READY=1\nSTATUS=ok")
			if sent != tt.sent || (err != nil) != tt.err {
				t.Fatalf("Notify = %v, %v", sent, err)
			}
			if !tt.sent {
				return
			}
			buf := make([]byte, 128)
			l.SetReadDeadline(time.Now().Add(waitTimeout))
			n, err := l.Read(buf)
			if err != nil || string(buf[:n]) != "READY=1\nSTATUS=ok" {
				t.Errorf("received %q, %v", buf[:n], err)
			}
			// NOTIFY_SOCKET is left for later messages.
			if os.Getenv("NOTIFY_SOCKET") != tt.socket {
				t.Error("NOTIFY_SOCKET unset")
			}
		})
	}
}

func TestSdNotifierWatchdogInterval(t *testing.T) {
	tests := []struct {
		name, usec, pid string
		want            time.Duration
		err             bool
	}{
		{"off", "", "", 0, false},
		{"ours", "2000000", strconv.Itoa(os.Getpid()), 2 * time.Second, false},
		{"no pid", "500000", "", 500 * time.Millisecond, false},
		{"other pid", "2000000", "1", 0, false},
		{"bad", "x", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tt.usec)
			t.Setenv("WATCHDOG_PID", tt.pid)
			if tt.usec == "" {
				os.Unsetenv("WATCHDOG_USEC")
			}
			if tt.pid == "" {
				os.Unsetenv("WATCHDOG_PID")
			}
			got, err := SdNotifier{}.WatchdogInterval()
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("WatchdogInterval = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

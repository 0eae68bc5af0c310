//go:build unix

package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func socketPath(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "s.sock")
}

func TestNoDaemon(t *testing.T) {
	c := New(filepath.Join(t.TempDir(), "none.sock"))
	_, err := c.Status(context.Background())
	if !errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "schedd run") {
		t.Fatalf("err %v, want ErrNoDaemon with a hint", err)
	}
}

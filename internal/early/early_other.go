//go:build !unix

package early

import (
	"path/filepath"

	"github.com/schedd/schedd/internal/platform/dirs"
)

// DefaultSocket is the control socket when neither --socket nor $SCHEDD_SOCKET names one.
func DefaultSocket() string { return filepath.Join(dirs.Runtime(), "schedd.sock") }

// send sends nothing here: the command makes its request the usual way.
func send(Request, int64) *Request { return nil }

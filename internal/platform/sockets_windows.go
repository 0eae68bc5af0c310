//go:build windows

package platform

import (
	"fmt"
	"os"
)

// Listen is not supported on Windows: a child cannot inherit a listening socket there
// the way systemd's protocol passes it.
func Listen(spec ListenSpec) (*os.File, error) {
	return nil, fmt.Errorf("listen %s for the gateway: %w", spec.Address, ErrNotSupported)
}

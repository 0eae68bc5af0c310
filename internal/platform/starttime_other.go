//go:build !linux && !darwin

package platform

// StartTime is known on Linux and macOS only: elsewhere a recorded gateway is never
// taken for a live one (on Windows its Job object dies with schedd).
func StartTime(int) (uint64, error) { return 0, ErrNotSupported }

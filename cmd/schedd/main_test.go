package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain looks for goroutines that outlived the tests: the commands run in process here,
// and the end-to-end runs of the built command are in internal/e2e.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// daemonEnv makes the test binary behave as the schedd command (see TestMain).
const daemonEnv = "SCHEDD_TEST_AS_SCHEDD"

func TestMain(m *testing.M) {
	maybeRunFakeGateway()
	if os.Getenv(daemonEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

package main

import (
	"os"
	"testing"

	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// daemonEnv makes the test binary behave as the schedd command (see TestMain).
const daemonEnv = "SCHEDD_TEST_AS_SCHEDD"

func TestMain(m *testing.M) {
	platform.ListenExecMain()
	maybeRunFakeGateway()
	if os.Getenv(daemonEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	pgtest.VerifyMain(m) // stops the PostgreSQL cluster of the fleet tests, then looks for leaks
}

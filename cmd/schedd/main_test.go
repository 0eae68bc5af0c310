package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/schedd/schedd/internal/queue/pgstore/pgtest"
)

// daemonEnv makes the test binary behave as the schedd command (see TestMain).
const daemonEnv = "SCHEDD_TEST_AS_SCHEDD"

func TestMain(m *testing.M) {
	maybeRunFakeGateway()
	if os.Getenv(daemonEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Stop the PostgreSQL cluster the fleet tests started, if any, then look for leaks.
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

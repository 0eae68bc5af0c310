package cron

import (
	"os"
	"testing"

	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	pgtest.VerifyMain(m)
}

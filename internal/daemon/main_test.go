package daemon

import (
	"os"
	"testing"

	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// TestMain stops the PostgreSQL cluster that the Postgres store's tests started, if any.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

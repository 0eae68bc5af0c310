package supervisor

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/schedd/schedd/internal/platform"
)

func TestMain(m *testing.M) {
	platform.ListenExecMain()
	maybeRunFakeGateway()
	goleak.VerifyTestMain(m)
}

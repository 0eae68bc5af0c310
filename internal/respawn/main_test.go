package respawn

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	maybeRunFakeGateway()
	goleak.VerifyTestMain(m)
}

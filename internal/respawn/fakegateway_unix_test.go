//go:build unix

package respawn

import "github.com/schedd/schedd/internal/testgateway"

func maybeRunFakeGateway() { testgateway.MaybeRun() }

//go:build unix

package supervisor

import "github.com/schedd/schedd/internal/testgateway"

func maybeRunFakeGateway() { testgateway.MaybeRun() }

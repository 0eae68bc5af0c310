//go:build !unix

package respawn

func maybeRunFakeGateway() {}

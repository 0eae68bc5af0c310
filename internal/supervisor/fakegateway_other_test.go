//go:build !unix

package supervisor

func maybeRunFakeGateway() {}

//go:build !unix

package main

func maybeRunFakeGateway() {}

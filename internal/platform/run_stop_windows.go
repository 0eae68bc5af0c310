//go:build windows

package platform

// terminate ends the Job at once: a Job has no polite stop that every program obeys.
func (g *runGroup) terminate() error { return g.kill() }

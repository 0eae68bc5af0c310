package queuetest

import (
	"testing"

	"github.com/schedd/schedd/internal/queue"
)

func TestMemoryConformance(t *testing.T) {
	Run(t, func(t *testing.T, b Bounds) queue.Store {
		m := NewMemory()
		m.MaxEntries, m.MaxPayload = b.MaxEntries, b.MaxPayload
		return m
	})
}

package storetest

import (
	"testing"

	"github.com/schedd/schedd/internal/store"
)

func TestMemoryConformance(t *testing.T) {
	Run(t, func(t *testing.T, b Bounds) store.Store {
		m := NewMemory()
		m.MaxEntries, m.MaxPayload = b.MaxEntries, b.MaxPayload
		return m
	})
}

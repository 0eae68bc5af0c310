package storetest

import (
	"context"
	"slices"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// Near passes the pending entries due before before, in due order, then the sending ones,
// as the drivers' indexes give them. It counts as a "near" read.
func (m *Memory) Near(ctx context.Context, before time.Time, page int, f func([]store.Ref)) error {
	refs, err := m.nearRefs(before)
	if err != nil {
		return err
	}
	for len(refs) > 0 {
		k := min(max(page, 1), len(refs))
		f(refs[:k])
		refs = refs[k:]
	}
	return nil
}

func (m *Memory) nearRefs(before time.Time) ([]store.Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.read("near"); err != nil {
		return nil, err
	}
	var pending, sending []store.Ref
	for _, e := range m.sorted(func(e *store.Entry) bool { return e.State == store.StatePending || e.State == store.StateSending }) {
		r := store.Ref{ID: e.ID, Sink: e.Sink, Priority: e.Priority, State: e.State, Failures: e.Failures,
			NextAttemptAt: e.NextAttemptAt, ExpiresAt: e.ExpiresAt, Epoch: e.Epoch}
		switch {
		case r.State == store.StateSending:
			sending = append(sending, r)
		case r.State == store.StatePending && r.NextAttemptAt.Before(before):
			pending = append(pending, r)
		}
	}
	slices.SortStableFunc(pending, func(a, b store.Ref) int { return a.NextAttemptAt.Compare(b.NextAttemptAt) })
	return append(pending, sending...), nil
}

// FirstDue returns the earliest due time of the pending entries due at or after from. It
// counts as a "first" read.
func (m *Memory) FirstDue(ctx context.Context, from time.Time) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.read("first"); err != nil {
		return time.Time{}, false, err
	}
	var at time.Time
	for _, x := range m.entries {
		if x.e.State == store.StatePending && !x.e.NextAttemptAt.Before(from) && (at.IsZero() || x.e.NextAttemptAt.Before(at)) {
			at = x.e.NextAttemptAt
		}
	}
	return at, !at.IsZero(), nil
}

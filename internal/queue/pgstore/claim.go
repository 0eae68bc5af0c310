package pgstore

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/queue"
)

// The delivery runtime's workers each claim an entry (MarkSending), send it and complete it
// (Complete): two commits an entry. Concurrent claims, and concurrent completions, share one
// statement each (a group): one round trip and one commit for all the entries of a burst,
// each caller still returning once its own change is committed.

// claimManySQL claims the entries of ids that are claimable; its arguments are positional
// (a named one is rewritten on every call): now, epoch, host, ids, until.
var claimManySQL = strings.NewReplacer("@now", "$1", "@epoch", "$2", "@host", "$3").Replace(
	`UPDATE schedd_deliveries d SET state = 'sending', attempts = attempts + 1, last_attempt_at = @now,
		owner_epoch = @epoch, lease_until = $5, updated_at = @now
	WHERE id = ANY($4) AND ` + claimable + " RETURNING " + colsPayload)

type claimReq struct {
	id, epoch int64
	lease     time.Duration
}

type claimRes struct {
	e   queue.Entry
	err error // the entry's own: ErrNotClaimable, ErrNotFound
}

// claimGroup is the run of Store.claims.
func (s *Store) claimGroup(ctx context.Context, reqs []claimReq) ([]claimRes, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	out := make([]claimRes, len(reqs))
	// The runtime claims under one epoch and one lease; requests that differ run apart.
	for _, part := range partition(reqs, func(r claimReq) [2]int64 { return [2]int64{r.epoch, int64(r.lease)} }) {
		r0 := reqs[part[0]]
		ids := make([]int64, len(part))
		for j, i := range part {
			ids[j] = reqs[i].id
		}
		now := s.now()
		rows, err := s.pool.Query(ctx, claimManySQL, now, r0.epoch, s.opts.HostID, ids, now+r0.lease.Milliseconds())
		if err != nil {
			return nil, s.fail(err)
		}
		claimed := map[int64]queue.Entry{}
		for rows.Next() {
			e, err := scanEntry(rows, true)
			if err != nil {
				rows.Close()
				return nil, s.fail(err)
			}
			claimed[e.ID] = e
		}
		if err := rows.Err(); err != nil {
			return nil, s.fail(err)
		}
		s.setConnected(nil)
		for _, i := range part {
			if e, ok := claimed[reqs[i].id]; ok {
				out[i].e = e
				delete(claimed, e.ID) // the same id asked twice: the second finds it claimed
				continue
			}
			out[i].err = s.explain(ctx, reqs[i].id, func(queue.State) error { return queue.ErrNotClaimable })
		}
	}
	return out, nil
}

type completeReq struct{ id, epoch int64 }

// completeGroup is the run of Store.completes: one error per request, its own (ErrNotOwner,
// ErrNotFound) or nil.
func (s *Store) completeGroup(ctx context.Context, reqs []completeReq) ([]error, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	out := make([]error, len(reqs))
	for _, part := range partition(reqs, func(r completeReq) int64 { return r.epoch }) {
		ids := make([]int64, len(part))
		for j, i := range part {
			ids[j] = reqs[i].id
		}
		now := s.now()
		rows, err := s.pool.Query(ctx, `UPDATE schedd_deliveries SET state = 'delivered', finished_at = $1,
			updated_at = $1, lease_until = NULL WHERE id = ANY($2) AND state = 'sending' AND owner_epoch = $3 RETURNING id`,
			now, ids, reqs[part[0]].epoch)
		if err != nil {
			return nil, s.fail(err)
		}
		done := map[int64]bool{}
		var id int64
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { done[id] = true; return nil }); err != nil {
			return nil, s.fail(err)
		}
		s.setConnected(nil)
		for _, i := range part {
			if done[reqs[i].id] {
				delete(done, reqs[i].id) // the same id twice: the second finds it delivered
				continue
			}
			out[i] = s.explain(ctx, reqs[i].id, func(queue.State) error { return queue.ErrNotOwner })
		}
	}
	return out, nil
}

type getRes struct {
	e   queue.Entry
	err error // ErrNotFound
}

// getGroup is the run of Store.gets: the entries of concurrent Gets in one read.
func (s *Store) getGroup(ctx context.Context, ids []int64) ([]getRes, error) {
	es, err := s.query(ctx, true, "SELECT "+colsPayload+" FROM schedd_deliveries WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]queue.Entry, len(es))
	for _, e := range es {
		byID[e.ID] = e
	}
	out := make([]getRes, len(ids))
	for i, id := range ids {
		e, ok := byID[id]
		if !ok {
			out[i].err = queue.ErrNotFound
			continue
		}
		if i > 0 && slices.Contains(ids[:i], id) {
			e = cloneEntry(e) // callers own what they get
		}
		out[i].e = e
	}
	return out, nil
}

// cloneEntry copies what an Entry shares: its headers and payload.
func cloneEntry(e queue.Entry) queue.Entry {
	e.Headers = maps.Clone(e.Headers)
	e.Payload = bytes.Clone(e.Payload)
	return e
}

// partition splits the indexes of xs by key, in order of first appearance.
func partition[T any, K comparable](xs []T, key func(T) K) [][]int {
	var parts [][]int
	at := map[K]int{}
	for i, x := range xs {
		k := key(x)
		p, ok := at[k]
		if !ok {
			p = len(parts)
			at[k] = p
			parts = append(parts, nil)
		}
		parts[p] = append(parts[p], i)
	}
	return parts
}

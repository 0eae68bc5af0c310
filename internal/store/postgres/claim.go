package postgres

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store"
)

// The delivery runtime's workers each claim a due entry (ClaimIfDue, whose statement checks
// that it is due; an entry it refuses is read with Get and claimed with MarkSending), send
// it and complete it (Complete): two commits a delivery. The claims and completions of
// concurrent workers go into one group (Store.ops) whose run is one pgx batch: a statement
// for the completions and one for the claims, sent together and run by the server as one
// implicit transaction, so one round trip and one commit for a burst of them; each caller
// returns once that commit is durable. A failed batch is every caller's error, and none of
// its changes is made. The reads go into a group of their own (Store.reads), so that a
// read does not wait for a commit.

type opKind uint8

const (
	opGet opKind = iota
	opClaim
	opClaimDue
	opComplete
)

type opReq struct {
	kind        opKind
	id, epoch   int64
	lease       time.Duration
	maxFailures int // opClaimDue
}

type opRes struct {
	e   store.Entry
	err error // the entry's own: ErrNotFound, ErrNotClaimable, ErrNotOwner
}

// claimSQL claims the entries of ids for which cond holds; its arguments are positional (a
// named one is rewritten on every call): now, epoch, ids, until, and cond's own ($5).
func claimSQL(cond string) string {
	return `UPDATE schedd_deliveries d SET state = 'sending', attempts = attempts + 1, last_attempt_at = $1,
		owner_epoch = $2, lease_until = $4, updated_at = $1
	WHERE d.id = ANY($3) AND ` + cond + " RETURNING " + colsPayload
}

var (
	// claimManySQL claims the entries that are claimable ($5: this host).
	claimManySQL = claimSQL(strings.NewReplacer("@now", "$1", "@epoch", "$2", "@host", "$5").Replace(claimable))
	// claimDueManySQL claims the entries that are pending, due, not expired and under a
	// number of failures ($5). It finds them by id: the due time is compared as an
	// expression (next_attempt_at + 0) that no index serves. Compared as the column, it
	// let the planner search the due index instead, when the statistics of a backlog due
	// later said nothing was due now; the entries enqueued since are, and each claim read
	// every one of them.
	claimDueManySQL = claimSQL(`d.state = 'pending' AND d.next_attempt_at + 0 <= $1
		AND (d.expires_at IS NULL OR d.expires_at > $1) AND d.failures < $5`)
)

const completeManySQL = `UPDATE schedd_deliveries SET state = 'delivered', finished_at = $1, updated_at = $1,
	lease_until = NULL WHERE id = ANY($2) AND state = 'sending' AND owner_epoch = $3 RETURNING id`

// opsGroup is the run of Store.ops.
func (s *Store) opsGroup(ctx context.Context, reqs []opReq) ([]opRes, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	now := s.now()
	b := &pgx.Batch{}
	got := map[opKind]map[int64]store.Entry{opGet: {}, opClaim: {}, opClaimDue: {}, opComplete: {}}
	scanInto := func(into map[int64]store.Entry, payload bool) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			for rows.Next() {
				e, err := scanEntry(rows, payload)
				if err != nil {
					return err
				}
				into[e.ID] = e
			}
			return rows.Err()
		}
	}
	type key struct {
		kind        opKind
		epoch       int64
		lease       time.Duration
		maxFailures int
	}
	for _, part := range partition(reqs, func(r opReq) key {
		if r.kind == opGet {
			return key{kind: opGet}
		}
		return key{r.kind, r.epoch, r.lease, r.maxFailures}
	}) {
		r0 := reqs[part[0]]
		ids := make([]int64, len(part))
		for j, i := range part {
			ids[j] = reqs[i].id
		}
		switch r0.kind {
		case opComplete:
			into := got[opComplete]
			b.Queue(completeManySQL, now, ids, r0.epoch).Query(func(rows pgx.Rows) error {
				var id int64
				_, err := pgx.ForEachRow(rows, []any{&id}, func() error { into[id] = store.Entry{ID: id}; return nil })
				return err
			})
		case opClaim:
			b.Queue(claimManySQL, now, r0.epoch, ids, now+r0.lease.Milliseconds(), s.opts.HostID).Query(scanInto(got[opClaim], true))
		case opClaimDue:
			b.Queue(claimDueManySQL, now, r0.epoch, ids, now+r0.lease.Milliseconds(), r0.maxFailures).Query(scanInto(got[opClaimDue], true))
		case opGet:
			b.Queue("SELECT "+colsPayload+" FROM schedd_deliveries WHERE id = ANY($1)", ids).Query(scanInto(got[opGet], true))
		}
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.failSent(err)
	}
	s.setConnected(nil)
	out := make([]opRes, len(reqs))
	for i, r := range reqs {
		e, ok := got[r.kind][r.id]
		switch {
		case ok && r.kind == opGet:
			out[i].e = cloneEntry(e) // callers own what they get; the same id may be read twice
		case ok:
			out[i].e = e
			delete(got[r.kind], r.id) // the same id claimed or completed twice: the second finds it done
		case r.kind == opGet:
			out[i].err = store.ErrNotFound
		case r.kind == opClaim, r.kind == opClaimDue:
			out[i].err = s.explain(ctx, r.id, func(store.State) error { return store.ErrNotClaimable })
		default:
			out[i].err = s.explain(ctx, r.id, func(store.State) error { return store.ErrNotOwner })
		}
	}
	return out, nil
}

// op runs one request in Store.ops.
func (s *Store) op(ctx context.Context, r opReq) (store.Entry, error) {
	g := s.ops
	if r.kind == opGet {
		g = s.reads
	}
	res, err := g.Do(ctx, r)
	if err == nil {
		err = res.err
	}
	return res.e, err
}

// cloneEntry copies what an Entry shares: its headers and payload.
func cloneEntry(e store.Entry) store.Entry {
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

package deliveries

import (
	"container/heap"
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store"
)

// scheduler is the runtime: it keeps the live entries due within a horizon armed at their
// due time in ONE timer heap (no goroutine or timer per entry) and starts due entries'
// attempts, by priority then due time, at most Workers at a time.
//
// It follows upstream's runtime scheduler (session-delivery-queue-runtime):
//   - a generation, bumped at start and stop, fences every arm and every worker result, so
//     nothing of a stopped runtime leaks into the next one;
//   - arming an id that is already armed earlier keeps the earlier time;
//   - an id being attempted is not armed from outside: its worker reloads the entry after
//     the attempt (the store is the source of truth) and re-arms it if it is still pending,
//     never sooner than RearmFloor, so an unchanged due row is not polled at timer speed;
//   - a failed reload re-arms the id after StoreRetry, and a failed read of the store is
//     retried with backoff, so one transient store error cannot orphan an entry.
//
// The horizon. Only the entries due within Horizon are kept armed (and the sending ones);
// the others stay in the store. A move of the horizon (at the start, then when horizonAt
// comes) reads what is near (store.Near) and arms the pending entries due within Horizon,
// then asks the store for the first one due after them (beyond): the next move is due
// Horizon/2 before it. An arm due later than Horizon from now (an entry enqueued with a
// delay, failed or released with a later next attempt) is not kept: it only pulls beyond,
// and horizonAt with it, earlier. So every pending entry is armed, or due at or after
// beyond, Horizon/2 after the next move at least, and a daemon idle with a backlog due in
// a day arms one timer, not one per entry; with nothing beyond, it arms none.
type scheduler struct {
	s *Service

	mu     sync.Mutex
	gen    uint64
	active bool
	epoch  int64
	wake   chan struct{}
	timers timerHeap
	ready  readyHeap
	slots  map[int64]slot   // armed ids: the due time that won, and its heap item's seq
	busy   map[int64]uint64 // ids queued for or held by a worker, with their generation
	seq    uint64
	// scanAt is when to read again what is near a shared store (store.Waker) without moving
	// the horizon; zero: none due.
	scanAt time.Time
	// beyond and horizonAt are the horizon (see scheduler): no pending entry that is not
	// armed is due before beyond (zero: every pending entry is armed), and the next move
	// is due at horizonAt (zero: none).
	beyond, horizonAt time.Time
	// retry is the delay before the next try of a failed read of the store.
	retry time.Duration
	// scanned is when the last scan began: a shared store's wake-ups start one scan per
	// RearmFloor at most, however many entries other hosts enqueue.
	scanned time.Time
	// parked holds, by sink index, due items whose sink was not ready (runtime_parked.go);
	// the readiness of their sinks is asked again at parkAt (zero: none parked).
	parked map[uint32]*parkedSink
	parkAt time.Time

	// base is the origin of the items' due times (monotonic), sinks the names items refer
	// to by index (append-only).
	base    time.Time
	sinks   []string
	sinkIdx map[string]uint32
}

// slot is the due time of an armed id that won, and its heap item's seq.
type slot struct {
	due int64
	seq uint64
}

// item is an armed entry: 48 bytes, as 100,000 of them may be armed at once.
type item struct {
	id      int64
	due     int64 // nanoseconds after the scheduler's base
	expires int64 // unix ms; 0: never
	seq     uint64
	gen     uint64
	prio    int32
	sink    uint32 // index in scheduler.sinks
}

// entryMeta is what the runtime keeps of an armed entry besides its id and due time: enough
// to order it and to leave it alone while its sink is not ready.
type entryMeta struct {
	prio    int
	sink    string
	expires time.Time
}

func metaOf(e store.Entry) entryMeta {
	return entryMeta{prio: e.Priority, sink: e.Sink, expires: e.ExpiresAt}
}

type result struct {
	id    int64
	gen   uint64
	rearm bool
	delay time.Duration
	it    item       // the item attempted
	meta  *entryMeta // when set, replaces the item's meta (the entry was reloaded)
	sent  bool       // the sink was called: the worker slot was freed before the result
}

func newScheduler(s *Service) *scheduler {
	return &scheduler{s: s, base: time.Now(), sinkIdx: map[string]uint32{}}
}

// at is the due offset of t; the caller holds mu.
func (r *scheduler) at(t time.Time) int64 { return int64(t.Sub(r.base)) }

// sinkIndex interns a sink name; the caller holds mu.
func (r *scheduler) sinkIndex(name string) uint32 {
	i, ok := r.sinkIdx[name]
	if !ok {
		i = uint32(len(r.sinks))
		r.sinks = append(r.sinks, name)
		r.sinkIdx[name] = i
	}
	return i
}

// metaOfItem expands an item's meta again; the caller holds mu.
func (r *scheduler) metaOfItem(it item) entryMeta {
	return entryMeta{prio: int(it.prio), sink: r.sinks[it.sink], expires: fromUnixMs(it.expires)}
}

// armEntry arms an entry the service just wrote (enqueue, operator retry). One that is due
// now skips the timer heap: it goes to a worker at once, or is parked when its sink is not
// ready (asked here, without holding mu), and a sink found ready sends what was parked for
// it.
func (r *scheduler) armEntry(e store.Entry) {
	now := time.Now()
	if e.NextAttemptAt.After(now) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.arm(e.ID, metaOf(e), now.Add(e.NextAttemptAt.Sub(now)), r.gen)
		return
	}
	notReady := isNotReady(r.s.policy().sinks[e.Sink])
	r.mu.Lock()
	defer r.mu.Unlock()
	it, ok := r.slot(e.ID, metaOf(e), now, r.gen)
	if !ok {
		return
	}
	if !notReady {
		r.unpark(it.sink)
	}
	r.place(it, notReady, now)
	if r.ready.Len() > 0 {
		r.poke()
	}
}

// arm schedules id at due, or, when due is past the horizon, leaves it to the store and
// pulls the horizon's next move before it; the caller holds mu.
func (r *scheduler) arm(id int64, m entryMeta, due time.Time, gen uint64) {
	if !due.Before(time.Now().Add(Horizon)) {
		if r.active && gen == r.gen && r.busy[id] != gen {
			r.later(due)
		}
		return
	}
	it, ok := r.slot(id, m, due, gen)
	if !ok {
		return
	}
	heap.Push(&r.timers, it)
	if r.timers[0].seq != it.seq {
		return // not the earliest: the loop's timer is set for an earlier item already
	}
	r.poke()
}

// later notes a pending entry due at due that is not armed: the horizon moves
// Horizon/2 before it at the latest; the caller holds mu.
func (r *scheduler) later(due time.Time) {
	if r.beyond.IsZero() || due.Before(r.beyond) {
		r.beyond = due
	}
	at := due.Add(-Horizon / 2)
	if r.horizonAt.IsZero() || at.Before(r.horizonAt) {
		r.horizonAt = at
		r.poke() // the loop's timer may be set for later
	}
}

// slot records id as armed at due and returns its item; false when the arm is void: of a
// stopped runtime, for an id being attempted, or later than the id's current arm. The
// caller holds mu.
func (r *scheduler) slot(id int64, m entryMeta, due time.Time, gen uint64) (item, bool) {
	if !r.active || gen != r.gen {
		return item{}, false
	}
	if r.busy[id] == gen {
		return item{}, false // its worker re-arms it after the attempt
	}
	d := r.at(due)
	if sl, ok := r.slots[id]; ok && sl.due <= d {
		return item{}, false // an earlier arm wins
	}
	r.seq++
	r.slots[id] = slot{due: d, seq: r.seq}
	return item{id: id, due: d, expires: unixMs(m.expires), seq: r.seq, gen: gen,
		prio: int32(max(min(m.prio, math.MaxInt32), math.MinInt32)), sink: r.sinkIndex(m.sink)}, true
}

// promote moves the due items of the timer heap to the ready heap, or parks those whose
// sink is not ready (runtime_parked.go); at parkAt it asks again the readiness of the sinks
// with parked items. Readiness is asked once per sink per call, without holding mu, so the
// lock that enqueues take is held only for the moves.
func (r *scheduler) promote(now time.Time) {
	r.mu.Lock()
	var due []item
	nowAt := r.at(now)
	for r.timers.Len() > 0 && r.timers[0].due <= nowAt {
		it := heap.Pop(&r.timers).(item)
		if !r.current(it) {
			continue // superseded by an earlier arm, or of a stopped runtime
		}
		due = append(due, it)
	}
	check := !r.parkAt.IsZero() && !now.Before(r.parkAt)
	if len(due) == 0 && !check {
		r.mu.Unlock()
		return
	}
	ready := map[uint32]bool{} // by sink: asked below
	if check {
		r.parkAt = time.Time{}
		for sink := range r.parked {
			ready[sink] = false
		}
	}
	for _, it := range due {
		ready[it.sink] = false
	}
	names := r.sinks
	r.mu.Unlock()
	sinks := r.s.policy().sinks
	for sink := range ready {
		ready[sink] = !isNotReady(sinks[names[sink]])
	}
	nowMs := now.UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	for sink, ok := range ready {
		switch {
		case ok:
			r.unpark(sink)
		case check:
			r.expireParked(sink, nowMs)
		}
	}
	for _, it := range due {
		r.place(it, !ready[it.sink], now)
	}
	if check && len(r.parked) > 0 && r.parkAt.IsZero() {
		r.parkAt = now.Add(RearmFloor)
	}
}

// open starts a generation that accepts arms (the runtime loop starts later, with run):
// what is enqueued or retried during the recovery pass is armed at once. The first read of
// what is near is due at the start of run.
func (r *scheduler) open(epoch int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.active = true
	r.epoch = epoch
	r.wake = make(chan struct{}, 1)
	r.timers, r.ready = nil, nil
	r.slots, r.busy = map[int64]slot{}, map[int64]uint64{}
	r.parked, r.parkAt = map[uint32]*parkedSink{}, time.Time{}
	r.scanAt, r.beyond, r.horizonAt, r.retry = time.Time{}, time.Time{}, time.Now(), StoreRetry
}

// close ends the generation open started (run does it too when it returns).
func (r *scheduler) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active {
		r.active = false
		r.gen++
		r.timers, r.ready, r.slots, r.busy = nil, nil, nil, nil
		r.parked, r.parkAt = nil, time.Time{}
	}
}

// adopt arms what the recovery pass left pending: the entries it read (due at its start,
// or interrupted), with the due time its outcome gave each.
func (r *scheduler) adopt(v passView) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active {
		return
	}
	now := time.Now()
	nowMs := now.UnixMilli()
	for i := range v.set.n {
		lr := v.set.at(i)
		if !lr.left {
			continue
		}
		m := entryMeta{prio: int(lr.prio), sink: v.sinks[lr.sink], expires: fromUnixMs(lr.expires)}
		r.arm(lr.id, m, now.Add(time.Duration(max(lr.next-nowMs, 0))*time.Millisecond), r.gen)
	}
}

// run is the runtime loop; it returns when ctx ends, after its workers exited.
//
// open must have been called: entries armed since then (enqueued during the recovery pass)
// are in the heap already. The loop starts with a read of what is near.
func (r *scheduler) run(ctx context.Context, epoch int64) {
	workers := r.s.cfg.Workers
	r.mu.Lock()
	gen := r.gen
	wake := r.wake
	r.mu.Unlock()
	armed := false // the first read of what is near is logged

	// At most workers attempts call a sink at a time (running), and once its sink returned
	// an attempt records the outcome while the next one starts, so at most 2*workers are
	// alive: a worker does not wait for the store's commit of one delivery before it takes
	// the next. Attempts run on goroutines the loop keeps for its life, started one at a
	// time when every one it has is busy (at most 2*workers, none while nothing was ever
	// due): a goroutine per attempt would grow a fresh stack for each (an HTTP exchange is
	// deep), a copy or two per delivery.
	type job struct {
		it   item
		sink string
	}
	jobs := make(chan job, 2*workers)       // never full: no more jobs than goroutines
	results := make(chan result, 2*workers) // room for every attempt's result at shutdown
	freed := make(chan struct{}, workers)   // room for every running attempt's
	running, alive, started := 0, 0, 0
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	// The retention purge is a one-shot timer, armed only while finished entries may be
	// waiting for it: an idle runtime (nothing pending, nothing kept) arms no timer at all.
	purge := time.NewTimer(PurgeEvery)
	purge.Stop()
	var purgeC <-chan time.Time // nil while the purge is not armed
	armPurge := func() {
		if purgeC == nil && r.s.retains() {
			purge.Reset(PurgeEvery)
			purgeC = purge.C
		}
	}
	if r.s.hasFinished(ctx) {
		armPurge()
	}
	// A store other hosts write (store.Waker) is rescanned when it signals and on a poll
	// timer; other stores get neither, so an idle runtime on SQLite arms no timer.
	var storeWake <-chan struct{}
	var pollC <-chan time.Time
	if r.shared() {
		w := r.s.store.(store.Waker)
		poll := time.NewTicker(w.RescanEvery())
		defer poll.Stop()
		storeWake, pollC = w.Wake(), poll.C
	}
	defer func() {
		timer.Stop()
		purge.Stop()
		r.close()
		close(jobs)
		wg.Wait()
	}()
	for {
		r.mu.Lock()
		now := time.Now()
		move := !r.horizonAt.IsZero() && !now.Before(r.horizonAt)
		scan := move || !r.scanAt.IsZero() && !now.Before(r.scanAt)
		if scan {
			r.scanAt, r.scanned = time.Time{}, now
		}
		r.mu.Unlock()
		if scan {
			began := time.Now()
			if n, ok := r.scan(ctx, gen, epoch, move); ok && move && !armed {
				armed = true
				r.s.log.Info("delivery runtime armed the pending entries", zap.Int("entries", n),
					zap.Duration("took", time.Since(began)))
			}
		}

		now = time.Now()
		r.promote(now)
		r.mu.Lock()
		var next time.Time
		if r.timers.Len() > 0 {
			next = r.base.Add(time.Duration(r.timers[0].due))
		}
		for _, at := range []time.Time{r.scanAt, r.horizonAt} {
			if !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		if !r.parkAt.IsZero() && (next.IsZero() || r.parkAt.Before(next)) {
			next = r.parkAt
		}
		for running < workers && alive < 2*workers && r.ready.Len() > 0 {
			it := heap.Pop(&r.ready).(item)
			running++
			alive++
			if alive > started { // every goroutine holds an attempt whose result is not in
				started++
				wg.Go(func() {
					for j := range jobs {
						results <- r.work(ctx, epoch, j.it, j.sink, freed)
					}
				})
			}
			jobs <- job{it, r.sinks[it.sink]}
		}
		r.mu.Unlock()

		if next.IsZero() {
			timer.Stop()
		} else {
			timer.Reset(next.Sub(now))
		}
		select {
		case <-timer.C:
		case <-wake:
		case <-storeWake:
			r.rescan()
		case <-pollC:
			r.rescan()
		case <-freed:
			running--
		case res := <-results:
			alive--
			if !res.sent {
				running-- // its sink was not called: no freed came
			}
			r.done(res)
			armPurge() // the attempt may have finished its entry
		case <-purgeC:
			purgeC = nil
			r.purge(ctx)
			if r.s.hasFinished(ctx) {
				armPurge()
			}
		case <-ctx.Done():
			return
		}
	}
}

// shared reports whether other hosts write the store too (it is rescanned).
func (r *scheduler) shared() bool {
	w, ok := r.s.store.(store.Waker)
	return ok && w.RescanEvery() > 0
}

// rescan makes a scan of the store due now, or RearmFloor after the last one began.
func (r *scheduler) rescan() {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := time.Now()
	if next := r.scanned.Add(RearmFloor); at.Before(next) {
		at = next
	}
	if r.scanAt.IsZero() || at.Before(r.scanAt) {
		r.scanAt = at
	}
}

// rescanHorizon is how far past a rescan of a shared store the entries it arms are due, in
// rescan periods: two, so an entry another host wrote is armed at least one rescan before
// it is due, even when a rescan runs late.
const rescanHorizon = 2

// scan reads what is near and arms it. When move is set it moves the horizon: it arms
// the pending entries due within Horizon (of a shared store, within rescanHorizon rescan
// periods if that is farther) and the sending ones, and reads the first entry due after
// them; else (a rescan of a shared store) it arms those due within rescanHorizon rescan
// periods and the sending ones. A failure is retried with backoff. It reports how many
// entries it read, and false when it failed.
func (r *scheduler) scan(ctx context.Context, gen uint64, epoch int64, move bool) (int, bool) {
	ahead := Horizon
	if w, ok := r.s.store.(store.Waker); ok && r.shared() {
		ahead = max(ahead, rescanHorizon*w.RescanEvery())
		if !move {
			ahead = rescanHorizon * w.RescanEvery()
		}
	}
	before := time.Now().Add(ahead)
	r.mu.Lock()
	if gen != r.gen {
		r.mu.Unlock()
		return 0, false
	}
	beyond := r.beyond
	if move {
		// What is written from now on past the horizon is noted in beyond, which joins
		// FirstDue's answer below; what was written before, the reads see.
		r.beyond, r.horizonAt = time.Time{}, time.Time{}
	}
	r.mu.Unlock()
	sinks := map[string]string{} // one copy of each sink name for all the entries
	n := 0
	// Arm a page at a time: the refs of 100,000 entries are never held at once.
	err := r.s.store.Near(ctx, before, livePage, func(page []store.Ref) {
		r.mu.Lock()
		defer r.mu.Unlock()
		now := time.Now()
		for _, ref := range page {
			due := now
			switch {
			case ref.State == store.StateSending && ref.Epoch == epoch:
				continue // in flight in this runtime
			case ref.State == store.StatePending:
				due = now.Add(max(ref.NextAttemptAt.Sub(now), 0))
			}
			sink, ok := sinks[ref.Sink]
			if !ok {
				sink = ref.Sink
				sinks[sink] = sink
			}
			r.arm(ref.ID, entryMeta{prio: ref.Priority, sink: sink, expires: ref.ExpiresAt}, due, gen)
			n++
		}
	})
	var first time.Time
	var found bool
	if err == nil && move {
		first, found, err = r.s.store.FirstDue(ctx, before)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return 0, false
	}
	if err != nil {
		if move && !beyond.IsZero() && (r.beyond.IsZero() || beyond.Before(r.beyond)) {
			r.beyond = beyond // what was not armed before is not armed yet
		}
		if ctx.Err() == nil {
			r.s.log.Error("read the deliveries due soon, retrying", zap.Duration("retry_in", r.retry), zap.Error(err))
			at := time.Now().Add(r.retry)
			if move {
				if r.horizonAt.IsZero() || at.Before(r.horizonAt) {
					r.horizonAt = at
				}
			} else {
				r.scanAt = at
			}
			r.retry = min(2*r.retry, StoreRetryMax)
		}
		return 0, false
	}
	r.retry = StoreRetry
	if move && found {
		r.later(first)
	}
	return n, true
}

// work attempts one entry (of sink), then reloads it and says when to arm it again. Once
// the sink returned it sends on freed, and sets sent in its result.
func (r *scheduler) work(ctx context.Context, epoch int64, it item, sink string, freed chan<- struct{}) result {
	res := result{id: it.id, gen: it.gen, it: it}
	a := r.s.attemptDue(ctx, epoch, it.id, sink, attemptOpts{sent: func() {
		res.sent = true
		freed <- struct{}{}
	}})
	if ctx.Err() != nil {
		return res
	}
	switch a.out {
	case outStoreError:
		res.rearm, res.delay = true, StoreRetry
		return res
	case outDelivered, outDead, outUnknownSink, outMaxRetries, outExpired:
		return res // recorded terminal: nothing to reload
	}
	e, err := r.s.store.Get(ctx, it.id)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		if ctx.Err() == nil {
			r.s.log.Error("reload delivery, retrying", zap.Int64("id", it.id), zap.Duration("retry_in", StoreRetry), zap.Error(err))
			res.rearm, res.delay = true, StoreRetry
		}
	case e.Interrupted(epoch) && r.shared():
		// Held by another live host: the rescans of the shared store come back to it (when
		// that host dies) rather than asking for it every RearmFloor.
	case e.State == store.StatePending || e.Interrupted(epoch):
		// Still pending: deferred, failed, or owned elsewhere. Never sooner than the floor.
		m := metaOf(e)
		res.rearm, res.delay, res.meta = true, max(RearmFloor, time.Until(e.NextAttemptAt)), &m
	}
	return res
}

func (r *scheduler) done(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[res.id] == res.gen {
		delete(r.busy, res.id)
	}
	if res.rearm {
		if !r.active || res.gen != r.gen {
			return // of a stopped runtime
		}
		m := res.meta
		if m == nil {
			im := r.metaOfItem(res.it)
			m = &im
		}
		r.arm(res.id, *m, time.Now().Add(res.delay), res.gen)
	}
}

// retains reports whether a retention purge is configured for delivered or dead entries.
func (s *Service) retains() bool {
	cfg := s.policy().cfg
	return cfg.DeliveredRetention > 0 || cfg.DeadRetention > 0
}

// hasFinished reports whether the store may hold entries that a retention purge deletes
// some day (true when it cannot tell). It asks the store's counts: a listing of the
// finished entries in id order would walk past every live one of a long backlog.
func (s *Service) hasFinished(ctx context.Context) bool {
	cfg := s.policy().cfg
	if cfg.DeliveredRetention <= 0 && cfg.DeadRetention <= 0 {
		return false
	}
	c, err := s.store.Counts(ctx)
	return err != nil || cfg.DeliveredRetention > 0 && c.Delivered > 0 || cfg.DeadRetention > 0 && c.Dead > 0
}

// purge deletes delivered tombstones and dead letters past their retention.
func (r *scheduler) purge(ctx context.Context) {
	cfg := r.s.policy().cfg
	for _, p := range []struct {
		state store.State
		keep  time.Duration
	}{{store.StateDelivered, cfg.DeliveredRetention}, {store.StateDead, cfg.DeadRetention}} {
		if p.keep <= 0 {
			continue
		}
		n, err := r.s.store.Purge(ctx, store.PurgeFilter{State: p.state, OlderThan: time.Now().Add(-p.keep)})
		if err != nil {
			r.s.log.Error("purge deliveries", zap.String("state", string(p.state)), zap.Error(err))
			continue
		}
		if n > 0 {
			r.s.log.Info("deliveries purged", zap.String("state", string(p.state)), zap.Int("count", n),
				zap.Duration("retention", p.keep))
		}
	}
}

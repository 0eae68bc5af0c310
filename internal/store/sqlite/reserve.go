package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// DefaultReserve is the disk space the SQLite store sets aside for the entries it already
// holds (see Options.Reserve).
const DefaultReserve = 4 << 20

// defaultProbeEvery bounds how often a refused enqueue looks for free space again.
const defaultProbeEvery = time.Second

// reserve is the space set aside next to the database so that entries already stored can
// still change state (be claimed, delivered, failed, dead-lettered) when the disk fills
// (R-ENV-04). Without it the first commit after the disk filled could not be written, and
// stored deliveries would stall until space returned.
//
// While there is space the reserve is a file of size bytes beside the database. The first
// commit that fails for lack of space deletes it and puts the store in "full" mode: enqueues
// are refused at once (ErrDiskFull) without touching the disk, and every other operation
// runs on the space the reserve gave back. A refused enqueue (at most once a second)
// probes for space: the reserve is written again and a second size bytes must fit beside
// it; only then does the store leave full mode, so enqueues resume with room to spare
// instead of eating the reserve at once.
//
// Owned by the writer goroutine, except full, which status readers load.
type reserve struct {
	path      string
	size      int64
	log       *zap.Logger
	every     time.Duration // probe period
	lastProbe time.Time
	full      atomic.Bool
}

func (r *reserve) enabled() bool { return r.size > 0 }

// ensure writes the reserve file to its full size and syncs it.
func (r *reserve) ensure() error {
	if !r.enabled() {
		return nil
	}
	if fi, err := os.Stat(r.path); err == nil && fi.Size() >= r.size {
		return nil
	}
	if err := fill(r.path, r.size, true); err != nil {
		_ = os.Remove(r.path) // give back what was written: the disk is short already
		return fmt.Errorf("space reserve %s: %w", r.path, err)
	}
	return nil
}

// fill extends the file at path to size bytes of zeros.
func fill(path string, size int64, sync bool) (err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	at, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	zeros := make([]byte, 64<<10)
	for at < size {
		n, err := f.Write(zeros[:min(int64(len(zeros)), size-at)])
		at += int64(n)
		if err != nil {
			return err
		}
	}
	if sync {
		return f.Sync()
	}
	return nil
}

// release deletes the reserve, giving its space to the operations on stored entries.
func (r *reserve) release() {
	if !r.enabled() {
		return
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn("delete the space reserve", zap.String("path", r.path), zap.Error(err))
	}
}

// enterFull puts the store in full mode; it reports whether it was not in it yet.
func (r *reserve) enterFull() bool {
	if r.full.Load() {
		return false
	}
	r.full.Store(true)
	r.lastProbe = time.Time{}
	r.release()
	return true
}

// refuse reports whether an enqueue must be refused now; in full mode it probes for space
// (at most every r.every) and leaves full mode when the probe succeeds.
func (r *reserve) refuse() bool {
	if !r.full.Load() {
		return false
	}
	now := time.Now()
	if !r.lastProbe.IsZero() && now.Sub(r.lastProbe) < r.every {
		return true
	}
	r.lastProbe = now
	if !r.spaceReturned() {
		return true
	}
	r.full.Store(false)
	r.log.Info("delivery store has space again: enqueues accepted", zap.String("reserve", r.path))
	return false
}

// spaceReturned rebuilds the reserve and checks that as much again fits beside it.
func (r *reserve) spaceReturned() bool {
	if !r.enabled() {
		return true
	}
	if err := r.ensure(); err != nil {
		return false
	}
	probe := r.path + ".probe"
	err := fill(probe, r.size, false)
	_ = os.Remove(probe)
	if err != nil {
		r.release()
		return false
	}
	return true
}

// isNoSpace reports a file system out of space.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

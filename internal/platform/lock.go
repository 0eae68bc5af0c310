package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ErrLocked means another schedd holds the state dir.
var ErrLocked = errors.New("state dir is locked by another schedd")

// LockedError reports who holds the state dir lock. It matches ErrLocked.
type LockedError struct {
	Path string
	PID  int // 0 when the holder has not written its pid yet
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%v: %s (holder pid unknown)", ErrLocked, e.Path)
	}
	return fmt.Sprintf("%v: %s held by pid %d", ErrLocked, e.Path, e.PID)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockFileName is the lock file inside the state dir.
const lockFileName = "schedd.lock"

// Lock is the held single-instance lock; it lasts until Close or process exit and is
// not inherited by children (the file is opened close-on-exec).
type Lock struct {
	f    *os.File
	path string
}

// LockStateDir takes the single-instance lock on dir/schedd.lock (creating dir, mode
// 0700, if needed) without blocking, and writes our pid into the file. If another
// process (or another LockStateDir in this one) holds it, it returns *LockedError
// naming the holder's pid as read from the file.
func LockStateDir(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock state dir: %w", err)
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock state dir: %w", err)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state dir: %w", err)
	}
	if !locked {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Path: path, PID: pid}
	}
	if err := writePID(f, os.Getpid()); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state dir: %w", err)
	}
	return &Lock{f: f, path: path}, nil
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Close clears the pid and releases the lock. The file stays: removing it would let two
// processes lock two different files of the same name.
func (l *Lock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	return errors.Join(f.Truncate(0), unlock(f), f.Close())
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(string(bytes.TrimSpace(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func writePID(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0)
	return err
}

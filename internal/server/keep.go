package server

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// KeepEvery is how often schedd looks for its sockets' files where it cannot be told of
// their removal (on Linux it is, by inotify): one lstat each. A removed runtime dir is rare
// (a tmp cleaner, a logout), so the look is seldom.
const KeepEvery = 10 * time.Second

// Keep returns ln, bound at path, as a listener that binds the socket again (mode, and its
// directory 0700) whenever Check finds the file gone: a runtime dir or tmp dir cleaned
// while schedd runs would otherwise leave it unreachable for good (R-ENV-07). The caller
// decides when to check (the daemon: platform.WatchRemovals). Close closes the socket of
// the moment; a Check after it binds nothing.
func Keep(ln net.Listener, path string, mode os.FileMode) *KeptListener {
	return &KeptListener{path: path, mode: mode, cur: ln}
}

// KeptListener is the listener of Keep.
type KeptListener struct {
	path string
	mode os.FileMode

	mu     sync.Mutex
	cur    net.Listener
	closed bool
}

// Accept accepts on the socket of the moment; one replaced meanwhile ends its Accept with
// an error, and Accept goes on with the new one.
func (k *KeptListener) Accept() (net.Conn, error) {
	for {
		ln := k.current()
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		k.mu.Lock()
		replaced := k.cur != ln && !k.closed
		k.mu.Unlock()
		if !replaced {
			return nil, err
		}
	}
}

func (k *KeptListener) current() net.Listener {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

func (k *KeptListener) Addr() net.Addr { return k.current().Addr() }

func (k *KeptListener) Close() error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true // no rebind after this
	k.mu.Unlock()
	return k.current().Close()
}

// Check binds the socket again if its file is gone, and reports whether it did.
func (k *KeptListener) Check() (bool, error) {
	if _, err := os.Lstat(k.path); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	ln, err := bind(k.path, k.mode)
	if err != nil {
		return false, err
	}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		ln.Close()
		return false, nil
	}
	old := k.cur
	k.cur = ln
	k.mu.Unlock()
	if ul, ok := old.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false) // its name is the new socket's now
	}
	old.Close()
	return true, nil
}

// ReportRebind logs what a check of a kept socket found: a failed rebind once until one
// works again (failing remembers), a rebind as a warning.
func ReportRebind(log *zap.Logger, what, path string, rebound bool, err error, failing *bool) {
	switch {
	case err != nil:
		if !*failing {
			log.Error(what+" is gone and cannot be bound again; retrying", zap.String("socket", path), zap.Error(err))
		}
		*failing = true
	case rebound:
		*failing = false
		log.Warn(what+" was removed; bound it again", zap.String("socket", path))
	}
}

package control

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// KeepEvery is how often Keep looks for the control socket's file: one lstat.
const KeepEvery = 2 * time.Second

// Keep returns ln, bound at path, as a listener that binds the socket again (mode, and its
// directory 0700) whenever the file is gone: a runtime dir or tmp dir cleaned while schedd
// runs would otherwise leave it unreachable for good (R-ENV-07). It looks every every.
// Close stops the watch and closes the socket of the moment.
func Keep(ln net.Listener, path string, mode os.FileMode, every time.Duration, log *zap.Logger) net.Listener {
	k := &keptListener{path: path, mode: mode, log: log, cur: ln, done: make(chan struct{})}
	k.wg.Go(func() { k.watch(every) })
	return k
}

type keptListener struct {
	path string
	mode os.FileMode
	log  *zap.Logger
	wg   sync.WaitGroup
	done chan struct{}

	mu     sync.Mutex
	cur    net.Listener
	closed bool
}

// Accept accepts on the socket of the moment; one replaced meanwhile ends its Accept with
// an error, and Accept goes on with the new one.
func (k *keptListener) Accept() (net.Conn, error) {
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

func (k *keptListener) current() net.Listener {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

func (k *keptListener) Addr() net.Addr { return k.current().Addr() }

func (k *keptListener) Close() error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	close(k.done)
	k.mu.Unlock()
	k.wg.Wait() // no rebind after this
	return k.current().Close()
}

func (k *keptListener) watch(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false // a rebind failed: say it again only once it works
	for {
		select {
		case <-k.done:
			return
		case <-t.C:
		}
		if _, err := os.Lstat(k.path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		ln, err := bind(k.path, k.mode)
		if err != nil {
			if !failing {
				k.log.Error("the control socket is gone and cannot be bound again; retrying",
					zap.String("socket", k.path), zap.Duration("every", every), zap.Error(err))
			}
			failing = true
			continue
		}
		failing = false
		k.mu.Lock()
		old := k.cur
		k.cur = ln
		k.mu.Unlock()
		if ul, ok := old.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false) // its name is the new socket's now
		}
		old.Close()
		k.log.Warn("the control socket was removed; bound it again", zap.String("socket", k.path))
	}
}

package pgtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Proxy forwards TCP connections to a test database, so that a test can cut them all
// (Down), as a database outage does, and let them through again (Up).
type Proxy struct {
	t      testing.TB
	target string
	mu     sync.Mutex
	l      net.Listener
	addr   string
	conns  []net.Conn
	lose   atomic.Int32           // commits whose reply is to be lost (LoseCommitReply)
	loseTo atomic.Pointer[string] // the statement whose reply is to be lost (LoseReplyTo)
}

// NewProxy starts a proxy to the database of dsn (from DSN) and returns it with the DSN
// that goes through it, with password added (the test cluster trusts every password).
func NewProxy(t testing.TB, dsn, password string) (*Proxy, string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))}
	p.Up()
	t.Cleanup(p.Down)
	via := fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable connect_timeout=2",
		p.l.Addr().(*net.TCPAddr).Port, cfg.User, cfg.Database)
	if password != "" {
		via += " password=" + password
	}
	return p, via
}

// Up listens again, on the same port.
func (p *Proxy) Up() {
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.l, p.addr = l, l.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			var lost atomic.Bool // a commit went to the server: its reply is dropped
			go func() { _ = p.frontend(c, d, &lost); d.Close() }()
			go func() { backend(d, c, &lost); c.Close() }()
		}
	}()
}

// Down stops listening and cuts every connection.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.l.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// LoseCommitReply makes the next COMMIT that a client sends through the proxy reach the
// server, which commits it, while its reply never reaches the client: the connection is
// cut when the reply comes, as when the server goes away between its commit and its reply.
func (p *Proxy) LoseCommitReply() { p.lose.Add(1) }

// LoseReplyTo makes the next statement whose SQL contains match, sent outside a
// transaction (it commits on its own), reach the server while its reply never reaches the
// client, as LoseCommitReply does for a COMMIT.
func (p *Proxy) LoseReplyTo(match string) { p.loseTo.Store(&match) }

// takeStatementLoss reports whether sql is the statement LoseReplyTo named, and forgets it.
func (p *Proxy) takeStatementLoss(sql []byte) bool {
	m := p.loseTo.Load()
	return m != nil && bytes.Contains(sql, []byte(*m)) && p.loseTo.CompareAndSwap(m, nil)
}

// takeLoss takes one of the commit replies to lose, if any is left.
func (p *Proxy) takeLoss() bool {
	for {
		n := p.lose.Load()
		if n <= 0 {
			return false
		}
		if p.lose.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// frontend copies the client's messages to the server, message by message, and sets lost
// before it passes on a COMMIT whose reply LoseCommitReply asked to lose.
func (p *Proxy) frontend(c, d net.Conn, lost *atomic.Bool) error {
	// The startup message has no type byte; an SSL or GSS encryption request (answered
	// 'N' by a server that has none) comes before it.
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		if n < 8 || n > 1<<20 {
			return fmt.Errorf("bad startup message length %d", n)
		}
		msg := make([]byte, n)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(c, msg[8:]); err != nil {
			return err
		}
		if _, err := d.Write(msg); err != nil {
			return err
		}
		if code := binary.BigEndian.Uint32(hdr[4:]); code != 80877103 && code != 80877104 {
			break
		}
	}
	stmts := map[string]string{} // prepared statements by name
	armed := false               // a statement whose reply is to be lost was bound
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		if n < 4 {
			return fmt.Errorf("bad message length %d", n)
		}
		msg := make([]byte, 5+n-4)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(c, msg[5:]); err != nil {
			return err
		}
		body := msg[5:]
		switch hdr[0] {
		case 'Q': // a simple query
			if bytes.EqualFold(bytes.TrimRight(body, "\x00; "), []byte("commit")) && p.takeLoss() || p.takeStatementLoss(body) {
				lost.Store(true)
			}
		case 'P': // Parse: statement name, then its SQL
			if name, rest, ok := bytes.Cut(body, []byte{0}); ok {
				sql, _, _ := bytes.Cut(rest, []byte{0})
				stmts[string(name)] = string(sql)
			}
		case 'B': // Bind: portal name, then statement name
			if _, rest, ok := bytes.Cut(body, []byte{0}); ok {
				name, _, _ := bytes.Cut(rest, []byte{0})
				armed = armed || p.takeStatementLoss([]byte(stmts[string(name)]))
			}
		case 'S': // Sync: the statements bound since the last one commit here
			if armed {
				armed = false
				lost.Store(true)
			}
		}
		if _, err := d.Write(msg); err != nil {
			return err
		}
	}
}

// backend copies the server's replies to the client until lost is set: then the reply in
// hand is dropped and the copy ends.
func backend(d, c net.Conn, lost *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := d.Read(buf)
		if lost.Load() {
			return
		}
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

package pgtest

import (
	"fmt"
	"io"
	"net"
	"sync"
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
			go func() { _, _ = io.Copy(d, c); d.Close() }()
			go func() { _, _ = io.Copy(c, d); c.Close() }()
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

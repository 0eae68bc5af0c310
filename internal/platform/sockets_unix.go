//go:build unix

package platform

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listen creates the listening socket spec describes and returns it as a file: blocking,
// close-on-exec (a child gets it only through Command.ExtraFiles), not used by schedd
// itself. A unix socket's stale file (one nobody listens on) is replaced; a live one is
// an error, as is a path that is not a socket.
func Listen(spec ListenSpec) (*os.File, error) {
	backlog := spec.Backlog
	if backlog <= 0 {
		backlog = unix.SOMAXCONN
	}
	if path, ok := strings.CutPrefix(spec.Address, "unix:"); ok {
		return listenUnix(path, backlog, spec)
	}
	return listenTCP(spec.Address, backlog)
}

func listenTCP(addr string, backlog int) (*os.File, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("port %q: want 1 to 65535", port)
	}
	var ip net.IP
	if host != "" {
		if ip = net.ParseIP(host); ip == nil {
			return nil, fmt.Errorf("host %q: want an IP address", host)
		}
	}
	var sa unix.Sockaddr
	family, v6only := unix.AF_INET6, 1
	switch {
	case ip == nil || ip.Equal(net.IPv6unspecified):
		// Every address: one dual-stack IPv6 socket, as Go's net.Listen(":port") makes.
		sa, v6only = &unix.SockaddrInet6{Port: p}, 0
	case ip.To4() != nil:
		family = unix.AF_INET
		sa4 := &unix.SockaddrInet4{Port: p}
		copy(sa4.Addr[:], ip.To4())
		sa = sa4
	default:
		sa6 := &unix.SockaddrInet6{Port: p}
		copy(sa6.Addr[:], ip.To16())
		sa = sa6
	}
	fd, err := socket(family)
	if errors.Is(err, unix.EAFNOSUPPORT) && ip == nil { // no IPv6 on this host
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: p}
		fd, err = socket(family)
	}
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		return nil, os.NewSyscallError("listen", err)
	}
	ok = true
	return os.NewFile(uintptr(fd), "tcp:"+addr), nil
}

// socket makes a blocking, close-on-exec stream socket. Blocking: os.NewFile then leaves
// it out of Go's poller, so passing it to a child never changes its flags under a gateway
// that already serves on it.
func socket(family int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

func listenUnix(path string, backlog int, spec ListenSpec) (*os.File, error) {
	if err := removeDeadSocket(path); err != nil {
		return nil, err
	}
	fd, err := socket(unix.AF_UNIX)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return nil, os.NewSyscallError("bind", err)
	}
	defer func() {
		if !ok {
			os.Remove(path)
		}
	}()
	if spec.Mode != 0 {
		if err := os.Chmod(path, spec.Mode.Perm()); err != nil {
			return nil, err
		}
	}
	if spec.Owner != "" {
		uid, gid, err := lookupOwner(spec.Owner)
		if err != nil {
			return nil, err
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := unix.Listen(fd, backlog); err != nil {
		return nil, os.NewSyscallError("listen", err)
	}
	ok = true
	return os.NewFile(uintptr(fd), "unix:"+path), nil
}

// removeDeadSocket removes path if it is a socket nobody listens on.
func removeDeadSocket(path string) error {
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("%s: %w (another process listens on it)", path, syscall.EADDRINUSE)
	}
	return removeStaleSocket(path)
}

// lookupOwner resolves "user" or "user:group" (names or numeric ids); -1 keeps one.
func lookupOwner(owner string) (uid, gid int, err error) {
	u, g, _ := strings.Cut(owner, ":")
	uid, gid = -1, -1
	if u != "" {
		if uid, err = strconv.Atoi(u); err != nil {
			pu, lerr := user.Lookup(u)
			if lerr != nil {
				return 0, 0, fmt.Errorf("owner %q: %w", owner, lerr)
			}
			uid, _ = strconv.Atoi(pu.Uid)
			if g == "" {
				gid, _ = strconv.Atoi(pu.Gid)
			}
		}
	}
	if g != "" {
		if gid, err = strconv.Atoi(g); err != nil {
			pg, lerr := user.LookupGroup(g)
			if lerr != nil {
				return 0, 0, fmt.Errorf("owner %q: %w", owner, lerr)
			}
			gid, _ = strconv.Atoi(pg.Gid)
		}
	}
	return uid, gid, nil
}

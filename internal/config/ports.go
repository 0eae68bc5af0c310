package config

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// gatewayPorts checks gateway.ports: each entry a TCP address the gateway binds, with a
// port from 1 to 65535 and a host that is empty (every interface), an IP address, or
// localhost. nil (unset) and an empty list are both fine.
func (k *checker) gatewayPorts(ports *[]string) {
	if ports == nil {
		return
	}
	for i, addr := range *ports {
		if msg := checkBindAddress(addr); msg != "" {
			k.errf(index("gateway.ports", i), "%s, got %s", msg, quote(addr))
		}
	}
}

// checkBindAddress says what is wrong with addr as an address to bind ("" = nothing).
func checkBindAddress(addr string) string {
	const want = `must be a TCP address the gateway binds, like "127.0.0.1:18789", ":18789" or "[::1]:18789"`
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return want
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "must end in a port from 1 to 65535"
	}
	if host == "" || strings.EqualFold(host, "localhost") {
		return ""
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return "must have an IP address, localhost or nothing (every interface) before the port"
	}
	return ""
}

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/schedd/schedd/bench/deliveries/load"
	"github.com/schedd/schedd/internal/api"
)

// wireEnqueue runs the requests of enqueue on one connection per client, each written in
// one write and its reply read with http.ReadResponse on the client's goroutine. net/http's
// Transport hands every request to a writing goroutine and every reply back from a reading
// one; here nothing sits between the client and the socket, so the figure is the daemon's
// share of a request (and the cluster's), as River's is its library's and the cluster's.
func wireEnqueue(socket, bench string, clients, n, expect int, entry func(int) api.DeliveryRequest) error {
	type conn struct {
		c  net.Conn
		br *bufio.Reader
		wb []byte
	}
	conns := make([]conn, clients)
	for i := range conns {
		c, err := net.Dial("unix", socket)
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = conn{c: c, br: bufio.NewReader(c)}
	}
	r, err := load.Run(bench, clients, n, func(client, i int) error {
		cn := &conns[client]
		body, err := json.Marshal(entry(i))
		if err != nil {
			return err
		}
		cn.wb = append(cn.wb[:0], "POST /v1/deliveries HTTP/1.1\r\nHost: schedd\r\nContent-Type: application/json\r\nContent-Length: "...)
		cn.wb = strconv.AppendInt(cn.wb, int64(len(body)), 10)
		cn.wb = append(append(cn.wb, "\r\n\r\n"...), body...)
		if _, err := cn.c.Write(cn.wb); err != nil {
			return err
		}
		resp, err := http.ReadResponse(cn.br, nil)
		if err != nil {
			return err
		}
		return checkReply(resp, expect)
	})
	if err != nil {
		return err
	}
	return load.Emit(r)
}

// checkReply reads and closes the body of a single enqueue's reply, and fails unless its
// status is expect.
func checkReply(resp *http.Response, expect int) error {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != expect {
		return fmt.Errorf("enqueue: status %d: %s", resp.StatusCode, b)
	}
	return nil
}

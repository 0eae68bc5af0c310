package platform

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// NotifyMessage is one sd_notify datagram from the gateway (or one of its descendants).
type NotifyMessage struct {
	PID    int               // sender pid from SCM_CREDENTIALS (Linux); 0 when unknown
	Fields map[string]string // KEY=VALUE lines; a later duplicate key wins
}

// notifyBufSize caps one datagram; longer ones are truncated to their complete lines.
const notifyBufSize = 64 << 10

// parseNotify splits a datagram into KEY=VALUE lines. Lines without '=' or with an empty
// key are ignored. When the datagram was truncated the incomplete last line is dropped.
func parseNotify(data []byte, truncated bool) map[string]string {
	if truncated {
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i]
		} else {
			data = nil
		}
	}
	fields := make(map[string]string)
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		key, value, ok := bytes.Cut(line, []byte{'='})
		if !ok || len(key) == 0 {
			continue
		}
		fields[string(key)] = string(value)
	}
	return fields
}

// removeStaleSocket removes a socket file left at path by an earlier run. Anything at
// path that is not a socket is left alone and reported.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	return os.Remove(path)
}

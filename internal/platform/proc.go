package platform

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Command describes a long-running child (the gateway).
type Command struct {
	Argv []string // Argv[0] is looked up in PATH if it has no separator
	// Env is the complete environment (build it with ChildEnv). nil means
	// ChildEnv(os.Environ(), nil): never our own service-manager variables.
	Env []string
	Dir string // working dir; "" = inherit
	// Output receives each line (without the newline; a trailing "\r" is dropped too) of
	// stdout/stderr, called from the drainer goroutines, one per stream, so calls for the
	// two streams may overlap. A line longer than MaxLine bytes is cut: Output gets its
	// first MaxLine bytes once, when the line ends, and cut is how many bytes after them
	// were read and dropped (0 for a whole line); however long a line, memory stays
	// bounded. The slice is only valid during the call. nil discards. Drainers never stop
	// reading, so a flooding child never blocks; a slow Output slows the drainer, not the
	// wait for the child.
	Output func(s Stream, line []byte, cut int64)
	// ExtraFiles are passed as fd 3.. (unix only). May be nil.
	// The caller keeps ownership and closes them.
	ExtraFiles []*os.File
	// ListenNames, when not empty, makes ExtraFiles (one name each) listening sockets
	// passed with systemd's protocol: the child finds LISTEN_FDS, LISTEN_FDNAMES and its
	// own pid as LISTEN_PID (set by a shim that execs it, see ListenExecMain). Unix only.
	ListenNames []string
}

// MaxLine is the longest line handed to Command.Output; the rest of a longer line is
// dropped and counted. 32 KiB keeps a logged line one entry even where journald reads the
// log (it splits lines longer than its LineMax, 48 KiB by default).
const MaxLine = 32 << 10

// SpawnError is returned by Start and RunCommand when the process could not be started
// (binary missing, not executable, bad working dir): Op says which step ("lookpath",
// "chdir", "exec", "pipe", "stdin", "job"), Path what it acted on, Err the errno-carrying
// cause, so errors.Is(err, syscall.ENOENT) (or fs.ErrNotExist) works.
type SpawnError struct {
	Op   string
	Path string
	Err  error
}

func (e *SpawnError) Error() string {
	if e.Path == "" {
		return "spawn: " + e.Op + ": " + e.Err.Error()
	}
	return "spawn: " + e.Op + " " + e.Path + ": " + e.Err.Error()
}

func (e *SpawnError) Unwrap() error { return e.Err }

// resolveArgv0 looks name up in PATH when it has no separator, like a shell.
func resolveArgv0(name string) (string, error) {
	if name == "" {
		return "", &SpawnError{Op: "lookpath", Err: errEmptyArgv}
	}
	if filepath.Base(name) != name {
		return name, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", &SpawnError{Op: "lookpath", Path: name, Err: lookPathErrno(err)}
	}
	return path, nil
}

var errEmptyArgv = errors.New("empty command")

// errNotDir is the cause when the working dir exists but is not a directory.
var errNotDir error = syscall.ENOTDIR

// lookPathErrno turns a PATH search failure into an error that also matches
// syscall.ENOENT and fs.ErrNotExist when nothing was found.
func lookPathErrno(err error) error {
	err = underlyingErr(err)
	if errors.Is(err, exec.ErrNotFound) {
		return notFoundError{}
	}
	return err
}

type notFoundError struct{}

func (notFoundError) Error() string { return exec.ErrNotFound.Error() }

func (notFoundError) Is(target error) bool {
	return target == exec.ErrNotFound || target == syscall.ENOENT || target == fs.ErrNotExist
}

// checkDir reports a missing or unusable working directory before anything is started,
// so it is told apart from a missing binary (inside the fork both are the same errno).
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return &SpawnError{Op: "chdir", Path: dir, Err: underlyingErr(err)}
	}
	if !fi.IsDir() {
		return &SpawnError{Op: "chdir", Path: dir, Err: errNotDir}
	}
	return nil
}

// underlyingErr unwraps *fs.PathError and *exec.Error down to the errno.
func underlyingErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// drainers runs one goroutine per output pipe; each reads until EOF (or until the read
// end is closed by release) and hands lines to out.
type drainers struct {
	files []*os.File
	wg    sync.WaitGroup
	done  chan struct{} // closed when every drainer has returned
}

func startDrainers(out func(Stream, []byte, int64), stdout, stderr *os.File) *drainers {
	d := &drainers{files: []*os.File{stdout, stderr}, done: make(chan struct{})}
	d.wg.Go(func() { drain(stdout, Stdout, out) })
	d.wg.Go(func() { drain(stderr, Stderr, out) })
	go func() {
		d.wg.Wait()
		close(d.done)
	}()
	return d
}

// lineReader is a drainer's line buffer, and the copy of a too long line's head kept
// while the rest of that line is read and dropped.
type lineReader struct {
	br   *bufio.Reader
	head []byte // allocated at the first too long line
}

// lineReaders recycles the drainers' line buffers, so a supervisor that restarts its
// gateway again and again does not grow its heap by two buffers per start.
var lineReaders = sync.Pool{New: func() any { return &lineReader{br: bufio.NewReaderSize(nil, MaxLine)} }}

func drain(r *os.File, s Stream, out func(Stream, []byte, int64)) {
	defer r.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, r)
		return
	}
	lr := lineReaders.Get().(*lineReader)
	lr.br.Reset(r)
	defer func() {
		lr.br.Reset(nil)
		lineReaders.Put(lr)
	}()
	for {
		line, err := lr.br.ReadSlice('\n')
		switch {
		case err == nil:
			out(s, trimNewline(line), 0)
		case errors.Is(err, bufio.ErrBufferFull):
			head, cut, err := lr.cutLine(line)
			out(s, head, cut)
			if err != nil {
				return
			}
		default:
			if len(line) > 0 {
				out(s, line, 0)
			}
			return
		}
	}
}

// cutLine handles a line that filled the buffer before its newline: it copies the head
// (the full buffer), then reads the rest of the line through its newline without keeping
// it. It returns the head and how many bytes of the line it dropped, both without the
// newline and a "\r" before it; err is the read error that ended the line instead of a
// newline.
func (lr *lineReader) cutLine(full []byte) (head []byte, cut int64, err error) {
	if lr.head == nil {
		lr.head = make([]byte, 0, MaxLine)
	}
	head = append(lr.head[:0], full...)
	var last byte // the last byte of the rest, before the newline
	for {
		b, err := lr.br.ReadSlice('\n')
		if err == nil {
			b = b[:len(b)-1]
		}
		cut += int64(len(b))
		if len(b) > 0 {
			last = b[len(b)-1]
		}
		switch {
		case err == nil && cut == 0:
			return trimCR(head), 0, nil
		case err == nil && last == '\r':
			return head, cut - 1, nil
		case err == nil:
			return head, cut, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return head, cut, err
		}
	}
}

func trimNewline(line []byte) []byte {
	return trimCR(line[:len(line)-1])
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// releaseGrace bounds how long release waits for the drainers to reach EOF on their own
// before it closes the read ends. Once the group is gone EOF is immediate; only a
// descendant that escaped the group can hold a pipe open that long.
const releaseGrace = time.Second

// release waits for the drainers (closing the pipes if EOF does not come within
// releaseGrace) and returns once they have all exited.
func (d *drainers) release() {
	t := time.NewTimer(releaseGrace)
	defer t.Stop()
	select {
	case <-d.done:
		return
	case <-t.C:
	}
	for _, f := range d.files {
		_ = f.Close()
	}
	<-d.done
}

var errStillRunning = errors.New("process is still running")

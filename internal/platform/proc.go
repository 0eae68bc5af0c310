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
	// two streams may overlap. Lines longer than 64 KiB are split. The slice is only valid
	// during the call. nil discards. Drainers never stop reading, so a flooding child never
	// blocks; a slow Output slows the drainer, not the wait for the child.
	Output func(s Stream, line []byte)
	// ExtraFiles are passed as fd 3.. (unix only). May be nil. The caller keeps ownership
	// and closes them.
	ExtraFiles []*os.File
	// ListenNames, when not empty, makes ExtraFiles (one name each) listening sockets
	// passed with systemd's protocol: the child finds LISTEN_FDS, LISTEN_FDNAMES and its
	// own pid as LISTEN_PID (set by a shim that execs it, see ListenExecMain). Unix only.
	ListenNames []string
}

// maxLine is the longest line handed to Command.Output in one call.
const maxLine = 64 << 10

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

func startDrainers(out func(Stream, []byte), stdout, stderr *os.File) *drainers {
	d := &drainers{files: []*os.File{stdout, stderr}, done: make(chan struct{})}
	d.wg.Go(func() { drain(stdout, Stdout, out) })
	d.wg.Go(func() { drain(stderr, Stderr, out) })
	go func() {
		d.wg.Wait()
		close(d.done)
	}()
	return d
}

// lineReaders recycles the drainers' 64 KiB line buffers, so a supervisor that restarts its
// gateway again and again does not grow its heap by two buffers per start.
var lineReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxLine) }}

func drain(r *os.File, s Stream, out func(Stream, []byte)) {
	defer r.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, r)
		return
	}
	br := lineReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		lineReaders.Put(br)
	}()
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			out(s, trimNewline(line))
		case errors.Is(err, bufio.ErrBufferFull):
			out(s, line)
		default:
			if len(line) > 0 {
				out(s, line)
			}
			return
		}
	}
}

func trimNewline(line []byte) []byte {
	line = line[:len(line)-1]
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

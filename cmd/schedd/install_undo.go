package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// installRun is what one `schedd install` wrote, so that a failure takes back exactly
// that and nothing that was there before.
type installRun struct {
	dirs    []string     // directories it made, in the order made
	config  string       // the config file it created, or ""
	service *writtenFile // the service file, if it wrote it
	socket  *writtenFile // systemd's socket unit, if it wrote it
}

// writtenFile is a file install wrote, and what was there before.
type writtenFile struct {
	path     string
	existed  bool   // whether the file was there before
	previous []byte // and what it held
}

// mkdirAll makes dir and its missing parents, remembering each one it made.
func (r *installRun) mkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		r.dirs = append(r.dirs, missing[i])
	}
	return nil
}

// writeServiceFile writes a service (or socket) file unless it already holds content,
// remembering in *w what it held before; it reports whether it wrote.
func (r *installRun) writeServiceFile(w **writtenFile, path string, content []byte) (bool, error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, content):
		return false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("read the service file: %w", err)
	}
	if err := r.mkdirAll(filepath.Dir(path)); err != nil {
		return false, fmt.Errorf("service file dir: %w", err)
	}
	changed, werr := writeIfChanged(path, content)
	if changed {
		*w = &writtenFile{path: path, existed: err == nil, previous: old}
	}
	return changed, werr
}

// checkManager runs the service manager's check: nothing is written when it fails.
func checkManager(ctx context.Context, manager string, step platform.ServiceStep) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := platform.RunCommand(cctx, platform.RunSpec{Argv: step.Argv})
	if err == nil && res.Status.Code != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if msg == "" {
			msg = strings.TrimSpace(string(res.Stdout))
		}
		err = fmt.Errorf("%s: %s", res.Status, strings.ReplaceAll(msg, "\n", "; "))
	}
	if err != nil {
		return fmt.Errorf("%s does not answer (%s: %w), so nothing was written or registered; "+
			"`schedd install --print` shows the file, --root DIR writes it without the service manager",
			manager, strings.Join(step.Argv, " "), err)
	}
	return nil
}

// undo takes back what the run did after cause made the install fail: a service file it
// created is unregistered and removed, one it replaced gets its old content back and is
// registered again (not started), and the config file and directories it made are
// removed. systemd's socket unit goes the same way as the service file. It returns cause,
// saying whether everything was taken back.
func (r *installRun) undo(ctx context.Context, stdout io.Writer, s platform.ServiceSpec, uid int, registered bool, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	fmt.Fprintln(stdout, "install failed: taking back what it did")
	var errs []error
	steps := func(st []platform.ServiceStep) {
		if err := runSteps(ctx, stdout, st); err != nil {
			errs = append(errs, err)
		}
	}
	restore := func(f *writtenFile) {
		switch {
		case f == nil:
		case f.existed:
			if _, err := writeIfChanged(f.path, f.previous); err != nil {
				errs = append(errs, err)
			} else {
				fmt.Fprintf(stdout, "put back the previous %s\n", f.path)
			}
		default:
			if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			} else {
				fmt.Fprintf(stdout, "removed %s\n", f.path)
			}
		}
	}
	switch {
	case r.service == nil && r.socket == nil:
	case r.service != nil && !r.service.existed:
		if registered {
			steps(platform.UninstallSteps(s, uid))
		}
		restore(r.service)
		restore(r.socket)
		if registered {
			steps(platform.UninstallAfterSteps(s))
		}
	default:
		if registered && r.socket != nil && !r.socket.existed {
			steps([]platform.ServiceStep{platform.SocketUninstallStep(s)})
		}
		restore(r.service)
		restore(r.socket)
		if registered {
			path := ""
			if r.service != nil {
				path = r.service.path
			}
			if r.socket != nil && !r.socket.existed {
				s.Socket = nil
			}
			steps(platform.InstallSteps(s, path, uid, true, false))
		}
	}
	if r.config != "" {
		if err := os.Remove(r.config); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(stdout, "removed %s\n", r.config)
		}
	}
	for i := len(r.dirs) - 1; i >= 0; i-- {
		// Only an empty directory goes: what someone else put there meanwhile stays.
		if err := os.Remove(r.dirs[i]); err == nil {
			fmt.Fprintf(stdout, "removed %s/\n", r.dirs[i])
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w; and taking back what this install did failed: %w", cause, errors.Join(errs...))
	}
	hint := ""
	if r.config != "" && registered {
		hint = " (the config was the example: write " + r.config + " with your gateway.command first, or install with --no-start)"
	}
	return fmt.Errorf("%w; nothing this install wrote or registered is left%s", cause, hint)
}

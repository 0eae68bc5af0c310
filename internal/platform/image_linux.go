package platform

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// ReleaseImagePages drops this process's mappings of the pages of its own executable's
// read-only segments (code and constant data) and returns how many bytes were mapped.
//
// A Go daemon touches most of its code and tables once while it starts (package
// initialisation, flag and config parsing), and the kernel maps file pages 64 KiB around
// each fault, so an idle schedd would keep several MiB of its binary resident that it
// never uses again. The pages stay in the page cache; what the daemon uses later is
// faulted back in from there, unchanged, because a read-only private mapping of the file
// holds nothing but the file's bytes. A segment holding pages of its own (a copy made by
// a relocation, as in a position-independent or dynamically linked build) is skipped, so
// nothing written to memory is ever dropped.
func ReleaseImagePages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	// smaps lists each mapping as its maps line, "start-end perms offset dev inode path",
	// followed by "Key: value" lines. A segment is dropped when it is the executable's,
	// read-only and private, and holds no anonymous (copied) page.
	type segment struct {
		start, end uintptr
		rss        int64
		copied     bool // holds anonymous pages: left alone
	}
	var segs []segment
	mine := false // the lines that follow belong to a segment appended to segs
	for line := range bytes.Lines(data) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := bytes.Cut(f[0], []byte("-")); ok && len(f) >= 5 {
			start, err1 := strconv.ParseUint(string(lo), 16, 64)
			end, err2 := strconv.ParseUint(string(hi), 16, 64)
			perms := f[1]
			mine = err1 == nil && err2 == nil && len(f) >= 6 && string(f[5]) == exe &&
				len(perms) == 4 && perms[1] == '-' && perms[3] == 'p'
			if mine {
				segs = append(segs, segment{start: uintptr(start), end: uintptr(end)})
			}
			continue
		}
		if !mine {
			continue
		}
		cur := &segs[len(segs)-1]
		if v, ok := smapsKB(line, "Rss:"); ok {
			cur.rss = v << 10
		} else if v, ok := smapsKB(line, "Anonymous:"); ok && v != 0 {
			cur.copied = true
		}
	}
	var released int64
	for _, s := range segs {
		if s.rss == 0 || s.copied {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, syscall.MADV_DONTNEED); e != 0 {
			return released, os.NewSyscallError("madvise", e)
		}
		released += s.rss
	}
	return released, nil
}

// smapsKB parses an smaps line "Key:   123 kB".
func smapsKB(line []byte, key string) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(key))
	if !ok {
		return 0, false
	}
	num, _, _ := bytes.Cut(bytes.TrimSpace(rest), []byte(" "))
	v, err := strconv.ParseInt(string(num), 10, 64)
	return v, err == nil
}

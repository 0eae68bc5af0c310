package storeid

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The record is written whole and read back; one that is not an identity is refused
// naming the record, never taken for no record.
func TestRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(path, []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Inspect(path)
	if err != nil || r.ID != 0 {
		t.Fatalf("no record: %+v, %v", r, err)
	}
	id, err := r.Settle(0, false)
	if err != nil || id <= 0 {
		t.Fatalf("new identity %d, %v", id, err)
	}
	if err := r.Keep(id); err != nil {
		t.Fatal(err)
	}
	if r, err = Inspect(path); err != nil || r.ID != id {
		t.Fatalf("record read back: %+v, %v; want %d", r, err, id)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 2 {
		t.Fatalf("files left: %v", entries)
	}
	for _, bad := range []string{"", "zz\n", "12\n", "-000000000000001\n"} {
		if err := os.WriteFile(path+Suffix, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Inspect(path); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path+Suffix) {
			t.Errorf("record %q: %v, want a damaged store naming the record", bad, err)
		}
	}
}

// Refuse keeps the cause and says what to do.
func TestRefuse(t *testing.T) {
	cause := errors.New("boom")
	err := Refuse(cause, "/s/x.db", "its entries are lost")
	if !errors.Is(err, ErrDamaged) || !errors.Is(err, cause) {
		t.Fatalf("%v does not wrap both", err)
	}
	for _, want := range []string{"boom", "restore /s/x.db from a backup", "move it aside with its -wal, -shm and -id files", "its entries are lost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

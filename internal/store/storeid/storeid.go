// Package storeid tells a store that is new from one that existed and was lost, so that a
// damaged SQLite store is never opened as a new, empty one.
//
// Each store (the delivery queue's schedd.db, cron's cron.db) holds an identity, a random
// number written into the database when the store is created, and keeps a copy in its
// identity record, a small file beside the database named after it with "-id" appended
// (schedd.db-id). Before the database is opened Inspect looks at the files: a database
// that is missing or empty while its identity record or its WAL is there held a store
// that is lost. Once the database is open Settle compares the two identities: a database
// that holds another store's identity, or none while the record says it should, is not
// this store. Either is an error that wraps ErrDamaged, and Refuse adds what to do.
//
// The order of writes makes a crash harmless: the identity is committed into the database
// first and the record written after it, atomically. A database whose record is missing
// (a crash in between, or a store from before identities) gets its record at the next
// open; a database that is missing or empty without a record or WAL is a new store (SQLite
// gives the file its first page before it ever writes a WAL).
package storeid

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrDamaged: the store's files show that it existed, but its database is missing, empty or
// another store's. Opening it would start an empty store in its place.
var ErrDamaged = errors.New("damaged store")

// Suffix names a database's identity record: the database's path with Suffix appended.
const Suffix = "-id"

// Record is what the files beside a database said before it was opened.
type Record struct {
	// Path is the database file.
	Path string
	// ID is the identity in the record; 0 when there is no record.
	ID int64
}

// Error is a store that cannot be trusted: the database at Path, and why (Reason names
// the files that show it). It wraps ErrDamaged. Its text is Reason: the caller names the
// store.
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string { return e.Reason }

func (e *Error) Unwrap() error { return ErrDamaged }

// Inspect reads the identity record of the database at path and refuses a database that is
// missing or empty (0 bytes) while its identity record or its WAL shows that it held a
// store. It changes nothing.
func Inspect(path string) (Record, error) {
	r := Record{Path: path}
	id, err := readRecord(path + Suffix)
	if err != nil {
		return r, err
	}
	r.ID = id
	size, dbErr := fileSize(path)
	if dbErr != nil && !errors.Is(dbErr, fs.ErrNotExist) {
		return r, fmt.Errorf("%s: %w", path, dbErr)
	}
	if dbErr == nil && size > 0 {
		return r, nil
	}
	state := "is missing"
	if dbErr == nil {
		state = "is empty (0 bytes)"
	}
	if r.ID != 0 {
		return r, &Error{Path: path, Reason: fmt.Sprintf("the database %s, but its identity record %s shows that it held a store",
			state, path+Suffix)}
	}
	if _, err := os.Lstat(path + "-wal"); err == nil {
		return r, &Error{Path: path, Reason: fmt.Sprintf("the database %s, but its write-ahead log %s is there: it held a store",
			state, path+"-wal")}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return r, fmt.Errorf("%s-wal: %w", path, err)
	}
	return r, nil
}

// Settle decides which identity the opened database must hold. dbID is the one it holds (0:
// none) and used says whether it holds a schema (false: it is a new file). A database with
// another identity than the record's, or with none and no schema while there is a record,
// is refused. When the identity returned differs from dbID the caller commits it into the
// database, then calls Keep.
func (r Record) Settle(dbID int64, used bool) (int64, error) {
	switch {
	case r.ID == 0 && dbID != 0:
		// The record was never written (a crash right after the store was created) or lost.
		return dbID, nil
	case r.ID == 0:
		// A new store, or one from before identities.
		return newID()
	case dbID == r.ID:
		return dbID, nil
	case dbID != 0:
		return 0, &Error{Path: r.Path, Reason: fmt.Sprintf("the database is another store (identity %016x) than the one its identity record %s names (%016x)",
			dbID, r.Path+Suffix, r.ID)}
	case !used:
		return 0, &Error{Path: r.Path, Reason: fmt.Sprintf("the database is empty, but its identity record %s shows that it held a store",
			r.Path+Suffix)}
	}
	// A store from before identities, such as a backup of this one made by an older
	// schedd: it takes the record's identity.
	return r.ID, nil
}

// Keep writes the identity record with id, unless it holds id already. The record is
// replaced atomically and synced.
func (r Record) Keep(id int64) error {
	if id == r.ID {
		return nil
	}
	path := r.Path + Suffix
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write identity record: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := fmt.Fprintf(tmp, "%016x\n", id); err != nil {
		return fmt.Errorf("write identity record %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync identity record %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write identity record %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write identity record %s: %w", path, err)
	}
	done = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync the directory of %s: %w", path, err)
	}
	return nil
}

// Refuse wraps err, which keeps the store at path from being opened, with what to do about
// it: restore the database from a backup, or move it aside with the files beside it to
// start an empty store on purpose. lost says what the store held that is then gone. The
// result wraps ErrDamaged and err.
func Refuse(err error, path, lost string) error {
	return &refusal{err: err, path: path, lost: lost}
}

type refusal struct {
	err  error
	path string
	lost string
}

func (r *refusal) Error() string {
	return fmt.Sprintf("%v; schedd does not start on a damaged store: restore %s from a backup, "+
		"or move it aside with its -wal, -shm and %s files to start with an empty one (%s)",
		r.err, r.path, Suffix, r.lost)
}

func (r *refusal) Unwrap() []error { return []error{ErrDamaged, r.err} }

func readRecord(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read identity record: %w", err)
	}
	s := strings.TrimSpace(string(b))
	id, err := strconv.ParseInt(s, 16, 64)
	if err != nil || id <= 0 || len(s) != 16 {
		return 0, &Error{Path: strings.TrimSuffix(path, Suffix),
			Reason: fmt.Sprintf("its identity record %s is not 16 hex digits: %.40q", path, s)}
	}
	return id, nil
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// newID is a random identity, positive (an SQLite integer).
func newID() (int64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("store identity: %w", err)
		}
		if id := int64(binary.BigEndian.Uint64(b[:]) >> 1); id != 0 {
			return id, nil
		}
	}
}

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// checked is what the check of a sound database file found.
type checked struct {
	info os.FileInfo
	// live is the bytes of the pages in use: the metas, the freelist and
	// every bucket's pages (compaction compares it with the file's size).
	live int64
	// damagedMeta is a meta page (0 or 1) that failed validation, bbolt
	// using the other one; -1 when both are sound.
	damagedMeta int
}

// inspect checks the database at path, under a shared lock, before
// anything writes to it: a damaged file is never opened for writing (a
// commit on it would overwrite the older meta page, the one a salvage may
// still need). nil: there is no database yet.
func inspect(path string, timeout time.Duration) (*checked, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	defer f.Close()
	if err := flock(f, path, false, timeout); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if fi.Size() == 0 {
		// bbolt makes a new database of an empty file. Beside a last-good
		// copy, though, the file is no new one: it lost its pages.
		if _, err := os.Stat(LastGoodPath(path)); err == nil {
			return nil, &CorruptError{Path: path, Reason: "the file is empty"}
		}
		return &checked{info: fi, damagedMeta: -1}, nil
	}
	return checkFile(path, f, fi, timeout)
}

// checkFile checks a database file that is not empty, in two steps: the
// store's reader reads every page a transaction can reach (pagefile.go:
// ranges, ids, offsets, no cycle), which makes the file safe to hand to
// bbolt; then bbolt's tx.Check checks what the pages mean (each page
// reachable or free, once; keys in order). It reads the whole file: at
// one start per daemon, a price worth not serving a damaged database.
func checkFile(path string, f *os.File, fi os.FileInfo, timeout time.Duration) (*checked, error) {
	pf, err := readPageFile(f, fi.Size())
	if err == nil {
		err = pf.truncated()
	}
	var flPages uint64
	if err == nil {
		_, flPages, err = pf.freelist()
	}
	var seen map[uint64]bool
	if err == nil {
		seen, err = pf.checkTree()
	}
	if err != nil {
		return nil, corrupt(path, err)
	}
	if pf.damagedMeta < 0 {
		err = bboltCheck(path, pf, timeout)
	} else {
		err = checkCopy(path, timeout)
	}
	if err != nil {
		return nil, err
	}
	live := (int64(len(seen)) + 2 + int64(flPages)) * pf.pageSize
	return &checked{info: fi, live: live, damagedMeta: pf.damagedMeta}, nil
}

// checkCopy runs bboltCheck on a copy of a database with one meta page
// damaged: tx.Check reads both meta pages as pages and stops at the
// damaged one, while bbolt serves the other one's tree, whole. bbolt
// writes a copy with both meta pages sound (tx.WriteTo); the next commit
// on the database itself rewrites the damaged page.
func checkCopy(path string, timeout time.Duration) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("check database %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	db, _, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return err
	}
	err = protect(func() error {
		return db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(tmp)
			return err
		})
	})
	db.Close()
	var fi os.FileInfo
	if err == nil {
		fi, err = tmp.Stat()
	}
	if err != nil {
		return fmt.Errorf("check database %s: copy it: %w", path, err)
	}
	pf, err := readPageFile(tmp, fi.Size())
	if err != nil {
		return corrupt(path, err)
	}
	if err := bboltCheck(tmp.Name(), pf, timeout); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return err
	}
	return nil
}

// maxProblems is how many of bbolt's check problems a reason quotes.
const maxProblems = 2

// bboltCheck runs bbolt's consistency check on a file the store's reader
// found sound, in a read-only bbolt (which takes a shared lock too), then
// checks the schema is one Open can migrate.
func bboltCheck(path string, pf *pageFile, timeout time.Duration) error {
	db, _, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return err
	}
	defer db.Close()
	var problems []string
	n := 0
	var schemaErr error
	err = protect(func() error {
		return db.View(func(tx *bolt.Tx) error {
			// The reader and bbolt must have picked the same meta page, or
			// the reader checked another tree than bbolt serves.
			if tx.Size() != int64(pf.meta.hwm)*pf.pageSize || uint64(tx.Cursor().Bucket().RootPage()) != pf.meta.root {
				return errors.New("bbolt and the store's reader chose different meta pages")
			}
			for err := range tx.Check() {
				if n++; n <= maxProblems {
					problems = append(problems, err.Error())
				}
			}
			if n == 0 {
				schemaErr = checkSchema(tx)
			}
			return nil
		})
	})
	switch {
	case err != nil:
		return corrupt(path, err)
	case n > 0:
		return corrupt(path, fmt.Errorf("bbolt's check found %d problems: %s", n, strings.Join(problems, "; ")))
	case errors.As(schemaErr, new(newerSchema)):
		return schemaErr
	case schemaErr != nil:
		return corrupt(path, schemaErr)
	}
	return nil
}

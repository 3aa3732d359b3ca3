package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// OpenReport is what Open did to the file besides opening it, for the
// daemon to log.
type OpenReport struct {
	// Compacted: the file had grown past its live pages and was
	// rewritten; SizeBefore and SizeAfter are its sizes in bytes.
	Compacted             bool
	SizeBefore, SizeAfter int64
	// CompactErr is why a compaction failed (the file served as it was).
	CompactErr error
	// DamagedMeta is a meta page (0 or 1) found damaged, bbolt using the
	// other one (the first write rewrote it); -1: none.
	DamagedMeta int
	// LastGood is the last-good copy written, or empty with LastGoodErr.
	LastGood    string
	LastGoodErr error
	// LogReplayed counts the new sessions' records the session log held
	// past the database's folded mark (a daemon that died before folding
	// them), now folded.
	LogReplayed int
}

// maxReplaced bounds how often Open starts over because the file it
// checked was replaced before it got the write lock.
const maxReplaced = 3

// errReplaced: the file at the path is no longer the one checked.
var errReplaced = errors.New("the database file was replaced while opening it")

// openChecked checks the file, then opens it for writing, compacting it
// first when it has grown (compaction.go). Everything that replaces the
// file does so under bbolt's exclusive lock; a process that waited for
// that lock on the old file notices (openWritable) and starts over.
func openChecked(path string, o Options) (*bolt.DB, OpenReport, error) {
	rep := OpenReport{DamagedMeta: -1}
	for range maxReplaced {
		c, err := inspect(path, o.Timeout)
		if err != nil {
			return nil, rep, err
		}
		var checkedInfo os.FileInfo
		if c != nil {
			checkedInfo, rep.DamagedMeta = c.info, c.damagedMeta
		}
		db, err := openWritable(path, o.Timeout, checkedInfo)
		if errors.Is(err, errReplaced) {
			continue
		}
		if err != nil {
			return nil, rep, err
		}
		removeLeftovers(path)
		if c == nil || rep.Compacted || !needsCompaction(c.info.Size(), c.live, o.CompactMinSize) {
			return db, rep, nil
		}
		after, err := compact(db, path, o.Timeout)
		if err != nil {
			rep.CompactErr = err
			return db, rep, nil
		}
		db.Close()
		rep.Compacted, rep.SizeBefore, rep.SizeAfter = true, c.info.Size(), after
		// The compacted file is checked as any other before it serves.
	}
	return nil, rep, fmt.Errorf("open database %s: %w", path, errReplaced)
}

// openWritable opens the database for writing, under bbolt's exclusive
// lock, and makes sure the file locked is the one at path and the one
// checked (nil: there was none).
func openWritable(path string, timeout time.Duration, checkedInfo os.FileInfo) (*bolt.DB, error) {
	db, f, err := openBolt(path, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		var now os.FileInfo
		if now, err = os.Stat(path); err == nil && (!os.SameFile(fi, now) || (checkedInfo != nil && !os.SameFile(fi, checkedInfo))) {
			err = errReplaced
		}
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openBolt opens the file with bbolt, a panic of bbolt's made an error.
// It returns the file bbolt opened too.
func openBolt(path string, o *bolt.Options) (*bolt.DB, *os.File, error) {
	var file *os.File
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	var db *bolt.DB
	err := protect(func() (err error) {
		db, err = bolt.Open(path, 0o600, o)
		return err
	})
	var pe panicError
	switch {
	case err == nil:
		return db, file, nil
	case errors.Is(err, bolt.ErrTimeout):
		return nil, nil, lockedError(path)
	case errors.As(err, &pe):
		// bbolt died holding the file and its lock: let go of both.
		if file != nil {
			file.Close()
		}
		return nil, nil, corrupt(path, err)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
		return nil, nil, corrupt(path, err)
	}
	return nil, nil, fmt.Errorf("open database %s: %w", path, err)
}

// panicError is a panic protect caught.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprintf("reading it panicked: %v", e.v) }

// protect runs fn and returns a panic of it as a panicError. A fault
// reading a memory-mapped file is a panic too, while fn runs: bbolt maps
// the database, and a damaged page can point outside the map.
func protect(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = panicError{r}
		}
	}()
	return fn()
}

// Leftovers of an interrupted compaction or last-good copy.
func compactTemp(path string) string  { return path + ".compact" }
func lastGoodTemp(path string) string { return LastGoodPath(path) + ".tmp" }

// removeLeftovers removes what a daemon killed while compacting or
// copying left; the caller holds the exclusive lock, so nothing is
// writing them.
func removeLeftovers(path string) {
	_ = os.Remove(compactTemp(path))
	_ = os.Remove(lastGoodTemp(path))
}

// renameDurably renames a file written and synced, then syncs the folder
// so the rename survives a crash.
func renameDurably(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

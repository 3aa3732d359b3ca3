package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Salvage is what Recover found and did.
type Salvage struct {
	// Path is the database.
	Path string
	// Damage is what was wrong with it; empty: it was sound, and Recover
	// changed nothing.
	Damage string
	// Source is the file the records were read from: Path, or its
	// last-good copy (FromLastGood) when Path could not be read at all
	// (Unreadable says why); SourceTime is then the copy's time.
	Source       string
	FromLastGood bool
	Unreadable   string
	SourceTime   time.Time
	// KeptAs is where the damaged file was moved.
	KeptAs string

	// Sessions, Templates, Volumes, Snapshots and Executions are the
	// records of the new database, at SchemaVersion (VersionLost: the
	// stored version could not be read; the records were taken as this
	// sandboxd's).
	Sessions, Templates, Volumes, Snapshots, Executions int
	SchemaVersion                                       int
	VersionLost                                         bool
	// Reattached counts records found on pages a damaged page had cut off
	// from their tree, put back by what they hold. SearchedOrphans is
	// false when the freelist could not be read: cut-off pages could then
	// not be told from free ones, and were not searched.
	Reattached      int
	SearchedOrphans bool
	// Undecodable counts records dropped because they were not the JSON
	// of their bucket's record (or bbolt refused their key).
	Undecodable int
	// Orphaned counts executions dropped because their session's record
	// was lost.
	Orphaned int
	// Problems counts pages and elements that could not be read and were
	// skipped; FirstProblem is the first.
	Problems     int
	FirstProblem string
}

// Recover salvages the database at path, which Open found corrupted: it
// reads every record it can (each page on its own, skipping what cannot
// be read, salvage.go) into a new database of the same schema, checks
// that one, moves the damaged file aside as <path>.corrupt-<unix time>
// and puts the new one in its place. When the file cannot be read at all
// (both meta pages lost, cut to nothing), the records come from the
// last-good copy instead. A sound database is left as it is.
//
// It refuses, after Options.Timeout, while a daemon holds the database.
func Recover(path string, o Options) (*Salvage, error) {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("there is no database at %s: nothing to recover", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Shared, as the check at open: a daemon (exclusive) excludes it.
	if err := flock(f, path, false, o.Timeout); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	rep := &Salvage{Path: path, Source: path}
	if fi.Size() == 0 {
		rep.Damage = "the file is empty"
	} else if _, err := checkFile(path, f, fi, o.Timeout); err == nil {
		return rep, nil
	} else if ce := (*CorruptError)(nil); errors.As(err, &ce) {
		rep.Damage = ce.Reason
	} else {
		return nil, err
	}

	pf, err := readPageFile(f, fi.Size())
	if err != nil {
		var lg *os.File
		if pf, lg, err = rep.fromLastGood(err); err != nil {
			return nil, err
		}
		defer lg.Close()
	}
	tmp, err := salvageInto(filepath.Dir(path), filepath.Base(path), pf, rep, o.Timeout)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp) // gone once renamed
	// Still the file checked? Another --recover may have been quicker.
	if now, err := os.Stat(path); err != nil || !os.SameFile(now, fi) {
		return nil, fmt.Errorf("the database %s was replaced while recovering it", path)
	}
	rep.KeptAs = fmt.Sprintf("%s.corrupt-%d", path, time.Now().Unix())
	if err := os.Rename(path, rep.KeptAs); err != nil {
		return nil, err
	}
	if err := renameDurably(tmp, path); err != nil {
		_ = os.Rename(rep.KeptAs, path)
		return nil, err
	}
	return rep, nil
}

// fromLastGood opens the last-good copy when the database itself cannot
// be read (why).
// The caller closes the copy once salvaged.
func (rep *Salvage) fromLastGood(why error) (*pageFile, *os.File, error) {
	lg := LastGoodPath(rep.Path)
	f, err := os.Open(lg)
	if err != nil {
		return nil, nil, fmt.Errorf("the database %s cannot be read (%v), and there is no last-good copy to recover from: %w", rep.Path, why, err)
	}
	fi, err := f.Stat()
	var pf *pageFile
	if err == nil {
		pf, err = readPageFile(f, fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("neither the database %s (%v) nor its last-good copy %s (%v) can be read", rep.Path, why, lg, err)
	}
	rep.Source, rep.FromLastGood, rep.Unreadable, rep.SourceTime = lg, true, why.Error(), fi.ModTime()
	return pf, f, nil
}

// salvageInto writes the salvage of pf into a new file in dir, synced
// and checked, and returns its path.
func salvageInto(dir, base string, pf *pageFile, rep *Salvage, timeout time.Duration) (_ string, retErr error) {
	t, err := os.CreateTemp(dir, base+".recover-*")
	if err != nil {
		return "", err
	}
	tmp := t.Name()
	t.Close()
	defer func() {
		if retErr != nil {
			os.Remove(tmp)
		}
	}()
	db, _, err := openBolt(tmp, &bolt.Options{NoSync: true, Timeout: timeout})
	if err != nil {
		return "", err
	}
	err = protect(func() error { return salvage(pf, db, rep) })
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("salvage %s: %w", rep.Source, err)
	}
	// Never put in place a file that would not pass the check at open.
	f, err := os.Open(tmp)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		_, err = checkFile(tmp, f, fi, timeout)
	}
	if err != nil {
		return "", fmt.Errorf("the salvaged database does not check: %w", err)
	}
	return tmp, nil
}

package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLastGoodCopy: each Open that finds the database sound copies it to
// its last-good copy, a sound database of its own holding what the
// database held at that start.
func TestLastGoodCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	lg := LastGoodPath(path)
	s := open(t, path, Options{})
	if rep := s.Report(); rep.LastGood != lg || rep.LastGoodErr != nil {
		t.Fatalf("report: %+v", rep)
	}
	if err := s.PutSession(&Record{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A copy of a leftover from a daemon killed while copying goes.
	if err := os.WriteFile(lastGoodTemp(path), []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, Options{})
	if err := s.PutSession(&Record{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(lastGoodTemp(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover copy: %v", err)
	}
	// The copy is a database that passes the check at open, with "a" (at
	// the second start) and not "b" (written after it).
	f, err := os.Open(lg)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	_, err = checkFile(lg, f, fi, time.Second)
	f.Close()
	if err != nil {
		t.Fatalf("the last-good copy does not check: %v", err)
	}
	recs := readRecords(t, lg)
	if _, ok := recs["session/a"]; !ok || len(recs) != 1 {
		t.Fatalf("last-good copy holds %v", recs)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("last-good copy mode %v", fi.Mode())
	}
}

// TestLastGoodCopyFailure: a copy that cannot be written does not stop
// the daemon; the report says why.
func TestLastGoodCopyFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	// A folder where the copy goes: the rename fails.
	if err := os.MkdirAll(filepath.Join(LastGoodPath(path), "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, Options{})
	if rep := s.Report(); rep.LastGoodErr == nil || rep.LastGood != "" {
		t.Fatalf("report: %+v", rep)
	}
	if _, err := os.Stat(lastGoodTemp(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed copy left: %v", err)
	}
}

// TestEmptyFileBesideLastGood: an empty file is a new database, unless a
// last-good copy says there was one.
func TestEmptyFileBesideLastGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, Options{})
	if err := s.PutSession(&Record{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of an emptied database: %v", err)
	}
}

package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestRecoverSoundDatabase leaves a sound database as it is.
func TestRecoverSoundDatabase(t *testing.T) {
	path := placeFixture(t, false)
	before, _ := os.ReadFile(path)
	rep, err := Recover(path, Options{})
	if err != nil || rep.Damage != "" || rep.KeptAs != "" {
		t.Fatalf("recover of a sound database: %+v, %v", rep, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("recover changed a sound database")
	}
	if m, _ := filepath.Glob(path + ".*"); len(m) != 0 {
		t.Fatalf("recover left files: %v", m)
	}
}

// TestRecoverRefusesWhileOpen: a running daemon holds the database;
// Recover must not touch it.
func TestRecoverRefusesWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	open(t, path, Options{})
	start := time.Now()
	_, err := Recover(path, Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another sandboxd") || time.Since(start) > 2*time.Second {
		t.Fatalf("recover of an open database: %v after %v", err, time.Since(start))
	}
}

// TestRecoverWithoutLastGood: a file nothing can be read from, and no
// copy: Recover says so and leaves the file.
func TestRecoverWithoutLastGood(t *testing.T) {
	for name, size := range map[string]int64{"both meta pages": -1, "empty": 0} {
		t.Run(name, func(t *testing.T) {
			path := placeFixture(t, false)
			if size < 0 {
				overwrite(t, path, int64(os.Getpagesize()), 1, 0, 1)
			} else {
				truncate(t, path, size)
			}
			before, _ := os.ReadFile(path)
			_, err := Recover(path, Options{})
			if err == nil || !strings.Contains(err.Error(), "no last-good copy") {
				t.Fatalf("recover: %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("a failed recover changed the file")
			}
			if m, _ := filepath.Glob(path + ".*"); len(m) != 0 {
				t.Fatalf("recover left files: %v", m)
			}
		})
	}
}

func TestRecoverNoDatabase(t *testing.T) {
	if _, err := Recover(filepath.Join(t.TempDir(), "sandboxd.db"), Options{}); err == nil || !strings.Contains(err.Error(), "nothing to recover") {
		t.Fatalf("recover of nothing: %v", err)
	}
}

// TestRecoverDropsWhatItCannotUse: records that are not JSON, and the
// history of a session whose record is gone, are dropped and counted;
// the rest, and each history's sequence, come back.
func TestRecoverDropsWhatItCannotUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	s := open(t, path, Options{})
	for _, id := range []string{"keep", "gone"} {
		if err := s.PutSession(&Record{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	var batch []Executed
	for _, id := range []string{"keep", "keep", "gone"} {
		batch = append(batch, Executed{SessionID: id, Execution: &Execution{ID: "e", SessionID: id}})
	}
	if err := s.AddExecutions(batch); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		// What no daemon writes: a session that is no JSON, a session's
		// record deleted under its history, and damage (an execution
		// whose value is no JSON object) bbolt's check does not see.
		if err := tx.Bucket(bucketSessions).Put([]byte("bad"), []byte("{not json")); err != nil {
			return err
		}
		if err := tx.Bucket(bucketSessions).Delete([]byte("gone")); err != nil {
			return err
		}
		h := tx.Bucket(bucketExecutions).Bucket([]byte("keep"))
		if err := h.Put(seqKey(99), []byte("[1,2]")); err != nil {
			return err
		}
		// A sequence behind the keys (its bucket header was rewritten).
		return h.SetSequence(0)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// And damage Open sees: its meta bucket's version is no number.
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("two")) })
	db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v", err)
	}

	rep, err := Recover(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 1 || rep.Executions != 2 || rep.Undecodable != 2 || rep.Orphaned != 1 || !rep.VersionLost || rep.SchemaVersion != SchemaVersion {
		t.Fatalf("recover: %+v", rep)
	}
	s = open(t, path, Options{})
	h, err := s.Executions("keep", 0)
	if err != nil || len(h) != 2 {
		t.Fatalf("history: %+v %v", h, err)
	}
	// The sequence goes on past the last key: the next execution is the
	// newest.
	if err := s.AddExecutions([]Executed{{SessionID: "keep", Execution: &Execution{ID: "new"}}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Executions("keep", 0); len(h) != 3 || h[0].ID != "new" {
		t.Fatalf("history after an execution: %+v", h)
	}
}

// TestRecoverRefusesNewerSchema: a newer sandboxd's database is not this
// one's to rewrite.
func TestRecoverRefusesNewerSchema(t *testing.T) {
	path := placeFixture(t, false)
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("999")) })
	db.Close()
	if _, err := Recover(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("recover of a newer database: %v", err)
	}
	// Damaged too: the salvage finds the version and stops.
	_, pf := placeRecords(t, path)
	overwrite(t, path, pf.pageSize, 1, bucketRoot(t, path, "sessions"))
	if _, err := Recover(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("recover of a damaged newer database: %v", err)
	}
	if m, _ := filepath.Glob(path + ".*"); len(m) != 0 {
		t.Fatalf("recover left files: %v", m)
	}
}

// TestOpenSchemaDamage: pages bbolt finds sound can still hold a schema
// Open cannot migrate; that is damage too, found before anything writes.
func TestOpenSchemaDamage(t *testing.T) {
	tests := []struct {
		name    string
		hurt    func(tx *bolt.Tx) error
		corrupt bool
	}{
		{"version is no number", func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("x")) }, true},
		{"negative version", func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("-1")) }, true},
		{"bucket missing", func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSessions) }, true},
		{"version 1 without templates", func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bucketTemplates); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keyVersion, []byte("1"))
		}, false},
		{"version is a bucket", func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketMeta).Delete(keyVersion); err != nil {
				return err
			}
			_, err := tx.Bucket(bucketMeta).CreateBucket(keyVersion)
			return err
		}, true},
		{"newer", func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("999")) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sandboxd.db")
			open(t, path, Options{}).Close()
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(tt.hurt)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			s, err := Open(path, Options{})
			if tt.name == "version 1 without templates" {
				// A version 1 database migrates: not damage.
				if err != nil {
					t.Fatalf("open of a version 1 database: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if errors.Is(err, ErrCorrupt) != tt.corrupt {
				t.Fatalf("open: %v; corrupt: %v, want %v", err, errors.Is(err, ErrCorrupt), tt.corrupt)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("open wrote to a database it refused")
			}
			if !tt.corrupt {
				return
			}
			rep, err := Recover(path, Options{})
			if err != nil || rep.Damage == "" {
				t.Fatalf("recover: %+v %v", rep, err)
			}
			open(t, path, Options{})
		})
	}
}

// TestSchemaBuckets holds schemaBuckets to what the migrations make.
func TestSchemaBuckets(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for v, m := range migrations {
		err := db.Update(func(tx *bolt.Tx) error {
			if err := m(tx); err != nil {
				return err
			}
			for _, b := range schemaBuckets {
				if got, want := tx.Bucket(b.name) != nil, v+1 >= b.since; got != want {
					t.Errorf("at version %d, bucket %s there: %v; schemaBuckets says %v", v+1, b.name, got, want)
				}
			}
			n := 0
			tx.ForEach(func([]byte, *bolt.Bucket) error { n++; return nil })
			want := 0
			for _, b := range schemaBuckets {
				if v+1 >= b.since {
					want++
				}
			}
			if n != want {
				t.Errorf("at version %d, %d buckets, schemaBuckets names %d", v+1, n, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenReplacedFile: a file replaced between its check and the write
// lock is not the one checked; Open starts over.
func TestOpenReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sandboxd.db")
	open(t, path, Options{}).Close()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(other)
	if _, err := openWritable(path, time.Second, fi); !errors.Is(err, errReplaced) {
		t.Fatalf("open of a replaced file: %v", err)
	}
	fi, _ = os.Stat(path)
	db, err := openWritable(path, time.Second, fi)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func TestCorruptErrorIsOneLine(t *testing.T) {
	err := corrupt("/db", errors.New("page 3:\n"+strings.Repeat("x", 500)))
	if !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "\n") || len(err.Reason) > maxReason+len("…") {
		t.Fatalf("%q", err)
	}
}

package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// holdFolds stops s's folder: what AddSession writes stays in the log
// until a write to the database or a crash.
func holdFolds(s *Store) {
	close(s.folding)
	s.folder.Wait()
}

// crash leaves s as a daemon killed now would: the log as it is, nothing
// folded, both files closed. s's folder must be held.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.closed.Store(true)
	if err := s.log.close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// ids lists the stored sessions' ids and, after "=", their status.
func ids(t *testing.T, s *Store) string {
	t.Helper()
	all, err := s.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range all {
		out = append(out, r.ID+"="+r.Status)
	}
	return strings.Join(out, " ")
}

func TestSessionLogReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	for _, tc := range []struct {
		name string
		// do writes to s, its folder held, before the crash.
		do           func(t *testing.T, s *Store)
		want         string
		wantReplayed int
	}{
		{"added, never folded", func(t *testing.T, s *Store) {
			for _, id := range []string{"a", "b", "c"} {
				add(t, s, id, "new")
			}
		}, "a=new b=new c=new", 3},
		{"a later put wins over the log's record", func(t *testing.T, s *Store) {
			add(t, s, "a", "new")
			if err := s.PutSession(&Record{ID: "a", Status: "stopped"}); err != nil {
				t.Fatal(err)
			}
		}, "a=stopped", 0},
		{"a delete is not undone", func(t *testing.T, s *Store) {
			add(t, s, "a", "new")
			add(t, s, "b", "new")
			if err := s.DeleteSession("a"); err != nil {
				t.Fatal(err)
			}
			add(t, s, "c", "new")
		}, "b=new c=new", 1},
		{"the log full: the database takes the rest", func(t *testing.T, s *Store) {
			big := strings.Repeat("x", 300<<10)
			for i := range 5 {
				if err := s.AddSession(&Record{ID: fmt.Sprint(i), Status: "new", Name: big}); err != nil {
					t.Fatal(err)
				}
			}
		}, "0=new 1=new 2=new 3=new 4=new", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(path)
			s := open(t, path, Options{})
			holdFolds(s)
			tc.do(t, s)
			crash(t, s)
			s = open(t, path, Options{})
			if got := s.Report().LogReplayed; got != tc.wantReplayed {
				t.Errorf("replayed %d, want %d", got, tc.wantReplayed)
			}
			if got := ids(t, s); got != tc.want {
				t.Errorf("after the crash: %q, want %q", got, tc.want)
			}
			// Replayed once: a clean close and open replays nothing.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open(t, path, Options{})
			if got := s.Report().LogReplayed; got != 0 {
				t.Errorf("replayed %d at the second open", got)
			}
			if got := ids(t, s); got != tc.want {
				t.Errorf("at the second open: %q, want %q", got, tc.want)
			}
		})
	}
}

func add(t *testing.T, s *Store, id, status string) {
	t.Helper()
	if err := s.AddSession(&Record{ID: id, Status: status}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionLogRounds: once folded, the log starts again at its start;
// what the earlier round left beyond the new chain is never replayed,
// nor is a torn last entry.
func TestSessionLogRounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	holdFolds(s)
	for _, id := range []string{"old1", "old2", "old3"} {
		add(t, s, id, "new")
	}
	for _, id := range []string{"old1", "old2", "old3"} {
		if err := s.DeleteSession(id); err != nil { // folds the three first
			t.Fatal(err)
		}
	}
	if s.log.off != 0 {
		t.Fatalf("the log did not start again once folded: at %d", s.log.off)
	}
	add(t, s, "n1", "new")
	add(t, s, "n2", "new")
	end := s.log.off
	crash(t, s)
	// The last entry torn: its last byte lost.
	writeLogAt(t, path, []byte{0xff}, end-1)
	s = open(t, path, Options{})
	if got := ids(t, s); got != "n1=new" {
		t.Fatalf("after the crash: %q", got)
	}
	if got := s.Report().LogReplayed; got != 1 {
		t.Fatalf("replayed %d", got)
	}
}

// TestSessionLogOfAnotherDatabase: a log beside a new database (the old
// one removed) is not replayed into it.
func TestSessionLogOfAnotherDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	holdFolds(s)
	add(t, s, "a", "new")
	crash(t, s)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, Options{})
	if got := ids(t, s); got != "" {
		t.Fatalf("a new database got %q", got)
	}
	add(t, s, "b", "new")
	if _, err := s.GetSession("b"); err != nil {
		t.Fatal(err)
	}
}

// TestSessionLogConcurrent: adds, puts and deletes from many goroutines
// with the folder running; every add is readable at once and a clean
// close leaves the log nothing to replay.
func TestSessionLogConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				id := fmt.Sprintf("%d-%d", g, i)
				if err := s.AddSession(&Record{ID: id, Status: "new"}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.GetSession(id); err != nil {
					t.Errorf("%s just added: %v", id, err)
				}
				switch i % 3 {
				case 1:
					err := s.PutSession(&Record{ID: id, Status: "put"})
					if err != nil {
						t.Error(err)
					}
				case 2:
					if err := s.DeleteSession(id); err != nil {
						t.Error(err)
					}
					if _, err := s.GetSession(id); !errdefs.IsNotFound(err) {
						t.Errorf("%s deleted: %v", id, err)
					}
				}
			}
		})
	}
	wg.Wait()
	want := ids(t, s)
	if n := len(strings.Fields(want)); n != 8*(9+8) {
		t.Fatalf("%d sessions stored", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, Options{})
	if got := s.Report().LogReplayed; got != 0 {
		t.Fatalf("replayed %d after a clean close", got)
	}
	if got := ids(t, s); got != want {
		t.Fatal("the sessions changed across a close and open")
	}
}

// FuzzReadChain: whatever the log file holds, reading it never panics
// and yields entries whose seqs follow one another.
func FuzzReadChain(f *testing.F) {
	e1 := (&logEntry{seq: 7, key: []byte("a"), value: []byte(`{"id":"a"}`)}).encode()
	e2 := (&logEntry{seq: 8, key: []byte("b"), value: []byte(`{}`)}).encode()
	f.Add(append(e1, e2...))
	f.Add(e1[:len(e1)-1])
	f.Add(append(e1, e1...))
	f.Fuzz(func(t *testing.T, b []byte) {
		chain, err := readChain(sectionOf(b))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(chain); i++ {
			if chain[i].seq != chain[i-1].seq+1 {
				t.Fatalf("seqs %d then %d", chain[i-1].seq, chain[i].seq)
			}
		}
	})
}

// sectionOf is b as a log file: zeros after it, up to logSize.
type sectionOf []byte

func (b sectionOf) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(b)) {
		copy(p, b[off:])
	}
	return len(p), nil
}

// TestSessionLogMarkLost: a database that lost the log's folded mark (a
// salvage that could not read it) keeps its own, newer records over the
// log's.
func TestSessionLogMarkLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	holdFolds(s)
	add(t, s, "a", "new")
	if err := s.PutSession(&Record{ID: "a", Status: "stopped"}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyLogFolded) }); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	// The log still holds a's first record, as it does when other
	// records came while it was folded (it starts again only once empty).
	rec, err := json.Marshal(&Record{ID: "a", Status: "new"})
	if err != nil {
		t.Fatal(err)
	}
	writeLogAt(t, path, (&logEntry{seq: 1, key: []byte("a"), value: rec}).encode(), 0)
	s = open(t, path, Options{})
	if got := ids(t, s); got != "a=stopped" {
		t.Fatalf("the log's record replaced the database's: %q", got)
	}
}

// TestSessionLogSyncFails: a create whose sync failed fails and is not
// stored; later ones go to the database.
func TestSessionLogSyncFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	holdFolds(s)
	add(t, s, "a", "new")
	fdatasync = func(int) error { return syscall.EIO }
	err := s.AddSession(&Record{ID: "lost", Status: "new"})
	fdatasync = unix.Fdatasync
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("a create whose sync failed: %v", err)
	}
	add(t, s, "b", "new")
	crash(t, s)
	s = open(t, path, Options{})
	if got := ids(t, s); got != "a=new b=new" {
		t.Fatalf("after the crash: %q", got)
	}
}

// writeLogAt writes b at off in the log of the database at path.
func writeLogAt(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(logPath(path), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

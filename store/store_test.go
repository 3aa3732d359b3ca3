package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
)

func open(t *testing.T, path string, o Options) *Store {
	t.Helper()
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSessions(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"), Options{})
	r := &Record{ID: "a", OwnerUID: 7, Status: "running", Labels: map[string]string{"k": "v"}, Env: []string{"A=1"}}
	if err := s.PutSession(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession("a")
	if err != nil || got.OwnerUID != 7 || got.Labels["k"] != "v" || got.Env[0] != "A=1" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.GetSession("b"); !errdefs.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
	all, err := s.Sessions()
	if err != nil || len(all) != 1 {
		t.Fatalf("list: %v %v", all, err)
	}
	if err := s.AddExecutions([]Executed{{SessionID: "a", ExecCount: 1, Execution: &Execution{ID: "e1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession("a"); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Executions("a", 0); len(h) != 0 {
		t.Fatal("history must go with the session")
	}
	// A late execution of a deleted session does not bring it back.
	if err := s.AddExecutions([]Executed{{SessionID: "a", ExecCount: 2, Execution: &Execution{ID: "e2"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession("a"); !errdefs.IsNotFound(err) {
		t.Fatalf("deleted session came back: %v", err)
	}
	if err := s.DeleteSession("a"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"), Options{HistoryLimit: 3})
	r := &Record{ID: "a", Status: "running"}
	if err := s.PutSession(r); err != nil {
		t.Fatal(err)
	}
	var batch []Executed
	for i := 0; i < 10; i++ {
		batch = append(batch, Executed{SessionID: "a", ExecCount: int64(i + 1), LastUsedAt: time.Now(), Execution: &Execution{ID: string(rune('a' + i))}})
		if i == 4 || i == 9 {
			if err := s.AddExecutions(batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	// A status written since is kept: only the counters move.
	r.Status = "stopped"
	h, err := s.Executions("a", 0)
	if err != nil || len(h) != 3 || h[0].ID != "j" || h[2].ID != "h" {
		t.Fatalf("history: %+v %v", h, err)
	}
	if h, _ := s.Executions("a", 1); len(h) != 1 || h[0].ID != "j" {
		t.Fatalf("limit: %+v", h)
	}
	// One by id, while kept: the newest, the oldest kept, and one let go.
	for id, want := range map[string]bool{"j": true, "h": true, "g": false} {
		e, err := s.Execution("a", id)
		if want && (err != nil || e.ID != id) || !want && !errdefs.IsNotFound(err) {
			t.Errorf("Execution(%s) = %+v, %v", id, e, err)
		}
	}
	if _, err := s.Execution("nosuch", "j"); !errdefs.IsNotFound(err) {
		t.Errorf("Execution of a session without history: %v", err)
	}
	got, _ := s.GetSession("a")
	if got.ExecCount != 10 || got.Status != "running" {
		t.Fatalf("the record is written with the execution: %+v", got)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	open(t, path, Options{})
	start := time.Now()
	_, err := Open(path, Options{Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "another sandboxd") || time.Since(start) > 2*time.Second {
		t.Fatalf("second open: %v after %v", err, time.Since(start))
	}
}

func TestMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	var v int
	s.db.View(func(tx *bolt.Tx) error { v, _ = version(tx); return nil })
	if v != SchemaVersion {
		t.Fatalf("new database at version %d, want %d", v, SchemaVersion)
	}
	// Reopening runs no migration twice and keeps data.
	s.PutSession(&Record{ID: "keep"})
	s.Close()
	s = open(t, path, Options{})
	if _, err := s.GetSession("keep"); err != nil {
		t.Fatal(err)
	}
	// A database from a newer daemon is refused, not damaged.
	s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("999")) })
	s.Close()
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
}

// TestMigrationZeroToOne runs the first migration on an empty database.
func TestMigrationZeroToOne(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := migrations[0](tx); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketMeta, bucketSessions, bucketExecutions} {
			if tx.Bucket(b) == nil {
				t.Errorf("bucket %s missing", b)
			}
		}
		return migrations[0](tx) // idempotent
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHistoryIsBoundedInTotal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{HistoryLimit: 10, HistoryTotalLimit: 5})
	base := time.Now()
	for _, id := range []string{"a", "b"} {
		if err := s.PutSession(&Record{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	// a gets the older executions: they go first.
	var batch []Executed
	for i := 0; i < 4; i++ {
		batch = append(batch,
			Executed{SessionID: "a", Execution: &Execution{ID: fmt.Sprintf("a%d", i), StartedAt: base.Add(time.Duration(i) * time.Second)}},
			Executed{SessionID: "b", Execution: &Execution{ID: fmt.Sprintf("b%d", i), StartedAt: base.Add(time.Duration(10+i) * time.Second)}})
	}
	if err := s.AddExecutions(batch); err != nil {
		t.Fatal(err)
	}
	a, _ := s.Executions("a", 0)
	b, _ := s.Executions("b", 0)
	if len(a)+len(b) != 5 || len(b) != 4 || a[0].ID != "a3" {
		t.Fatalf("a %+v b %+v", a, b)
	}
	if err := s.DeleteSession("b"); err != nil {
		t.Fatal(err)
	}
	// The count survives a reopen: 1 left, room for 4 more.
	s.Close()
	s = open(t, path, Options{HistoryLimit: 10, HistoryTotalLimit: 5})
	if err := s.AddExecutions([]Executed{{SessionID: "a", Execution: &Execution{ID: "new", StartedAt: base.Add(time.Hour)}}}); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Executions("a", 0); len(a) != 2 {
		t.Fatalf("after reopen: %+v", a)
	}
}

// TestHistoryIsInStartOrder: a history lists its executions by when they
// started, not by when they were recorded (one queued behind another ends
// first), after those a database from before keyed 1, 2, 3, …; two that
// started in the same nanosecond are both kept.
func TestHistoryIsInStartOrder(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"), Options{HistoryLimit: 10})
	if err := s.PutSession(&Record{ID: "a", Status: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { // as 4f81208 wrote it
		h, err := tx.Bucket(bucketExecutions).CreateBucket([]byte("a"))
		if err != nil {
			return err
		}
		s.total++
		return h.Put(seqKey(1), []byte(`{"id":"old","started_at":"2026-01-01T00:00:00Z"}`))
	}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for _, e := range []*Execution{
		{ID: "queued", StartedAt: t0.Add(time.Millisecond)},
		{ID: "first", StartedAt: t0},
		{ID: "twin", StartedAt: t0},
		{ID: "unstarted"},
	} {
		if err := s.AddExecutions([]Executed{{SessionID: "a", Execution: e}}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.Executions("a", 0)
	var ids []string
	for _, e := range h {
		ids = append(ids, e.ID)
	}
	if want := "unstarted queued twin first old"; err != nil || strings.Join(ids, " ") != want {
		t.Fatalf("history %q %v, want %q", ids, err, want)
	}
}

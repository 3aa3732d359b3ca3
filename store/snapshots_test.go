package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// TestSnapshots: a snapshot's record is put whole, read by id, listed in
// id order with the source session's record inside, and deleted (twice is
// no error); it survives a reopen.
func TestSnapshots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	at := time.Now().UTC().Truncate(time.Second)
	for _, id := range []string{"b2", "a1"} {
		if err := s.PutSnapshot(&Snapshot{SnapshotID: id, OwnerUID: 1000, CreatedAt: at, SizeBytes: 10,
			Session: Record{ID: "s-" + id, Template: "python", Env: []string{"A=1"}}}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Snapshots()
	if err != nil || len(all) != 2 || all[0].SnapshotID != "a1" || all[1].Session.ID != "s-b2" || all[1].Session.Env[0] != "A=1" {
		t.Fatalf("list: %+v %v", all, err)
	}
	if _, err := s.GetSnapshot("nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("get of a missing one: %v", err)
	}
	if err := s.DeleteSnapshot("a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSnapshot("a1"); err != nil {
		t.Fatalf("a second delete: %v", err)
	}
	s.Close()
	s = open(t, path, Options{})
	if got, err := s.GetSnapshot("b2"); err != nil || got.SizeBytes != 10 || !got.CreatedAt.Equal(at) {
		t.Fatalf("after a reopen: %+v %v", got, err)
	}
}

package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestGroupCommit: concurrent writes all land (in fewer commits than
// writes), and one that fails fails alone.
func TestGroupCommit(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	var g groupCommit
	bad := errors.New("refused")
	const n = 64
	errs := make([]error, n)
	put := func(i int) {
		errs[i] = g.update(db, func(tx *bolt.Tx) error {
			if i == 7 {
				return bad
			}
			return tx.Bucket([]byte("b")).Put(fmt.Appendf(nil, "k%d", i), []byte("v"))
		})
	}
	// The first write commits while the others arrive: they wait, and go
	// in one commit (two, for the one that fails).
	first := make(chan struct{})
	go func() {
		defer close(first)
		errs[0] = g.update(db, func(tx *bolt.Tx) error {
			for {
				g.mu.Lock()
				queued := len(g.pending)
				g.mu.Unlock()
				if queued == n-1 {
					return tx.Bucket([]byte("b")).Put([]byte("k0"), []byte("v"))
				}
				time.Sleep(time.Millisecond)
			}
		})
	}()
	for {
		g.mu.Lock()
		leading := g.leading
		g.mu.Unlock()
		if leading {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			put(i)
		}()
	}
	wg.Wait()
	<-first
	for i, err := range errs {
		if (i == 7) != errors.Is(err, bad) || (i != 7 && err != nil) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	commits := g.commits.Load()
	_ = db.View(func(tx *bolt.Tx) error {
		if k := tx.Bucket([]byte("b")).Stats().KeyN; k != n-1 {
			t.Errorf("%d keys written, want %d", k, n-1)
		}
		return nil
	})
	t.Logf("%d writes in %d commits", n, commits)
	if commits != 3 {
		t.Errorf("%d writes took %d commits, want 3", n, commits)
	}
	if g.leading || len(g.pending) > 0 {
		t.Fatalf("left leading %v with %d pending", g.leading, len(g.pending))
	}
}

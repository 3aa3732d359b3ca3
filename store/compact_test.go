package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestNeedsCompaction(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name            string
		size, live, min int64
		want            bool
	}{
		{"small file, mostly free", 20 * mib, 1 * mib, DefaultCompactMinSize, false},
		{"large file, mostly live", 200 * mib, 150 * mib, DefaultCompactMinSize, false},
		{"bbolt's own step over live data", 48 * mib, 30 * mib, DefaultCompactMinSize, false},
		{"large file, mostly free", 200 * mib, 20 * mib, DefaultCompactMinSize, true},
		{"just over twice", 64*mib + 1, 32 * mib, DefaultCompactMinSize, true},
		{"exactly twice", 64 * mib, 32 * mib, DefaultCompactMinSize, false},
		{"never", 200 * mib, 1 * mib, -1, false},
	}
	for _, tt := range tests {
		if got := needsCompaction(tt.size, tt.live, tt.min); got != tt.want {
			t.Errorf("%s: needsCompaction(%d, %d, %d) = %v", tt.name, tt.size, tt.live, tt.min, got)
		}
	}
}

// TestCompaction grows a database with long histories, deletes most of
// them, and has Open compact it: the file shrinks, every record and
// sequence stays, and the next start leaves it alone.
func TestCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	s := open(t, path, Options{})
	var batch []Executed
	for i := range 100 {
		id := fmt.Sprintf("s%03d", i)
		if err := s.PutSession(&Record{ID: id}); err != nil {
			t.Fatal(err)
		}
		for j := range 20 {
			batch = append(batch, Executed{SessionID: id, Execution: &Execution{ID: fmt.Sprintf("%s-%d", id, j), Stdout: strings.Repeat("x", 4000)}})
		}
	}
	if err := s.AddExecutions(batch); err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 100; i++ {
		if err := s.DeleteSession(fmt.Sprintf("s%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	grown := fileSize(t, path)
	want := readRecords(t, path)
	wantSeq := sequences(t, path)

	// Under the default floor (32 MiB) the file stays as it is.
	s = open(t, path, Options{})
	if s.Report().Compacted || fileSize(t, path) != grown {
		t.Fatalf("compacted under the floor: %+v", s.Report())
	}
	s.Close()

	s = open(t, path, Options{CompactMinSize: 4 << 20})
	rep := s.Report()
	t.Logf("%+v", rep)
	if !rep.Compacted || rep.SizeBefore != grown || rep.SizeAfter > grown/4 || fileSize(t, path) != rep.SizeAfter {
		t.Fatalf("compaction of a %d-byte file: %+v, now %d bytes", grown, rep, fileSize(t, path))
	}
	if _, err := os.Stat(compactTemp(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("compaction left its copy: %v", err)
	}
	// The store serves the compacted file: a write shows in it.
	if err := s.AddExecutions([]Executed{{SessionID: "s000", Execution: &Execution{ID: "new"}}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Executions("s000", 1); len(h) != 1 || h[0].ID != "new" {
		t.Fatalf("newest after compaction: %+v", h)
	}
	s.Close()
	got := readRecords(t, path)
	for k := range got { // the one written since
		if _, ok := want[k]; !ok && strings.HasPrefix(k, "execution/s000/") {
			delete(got, k)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d records after compaction, want %d", len(got), len(want))
	}
	for k, v := range want {
		if string(got[k]) != string(v) {
			t.Fatalf("%s changed in compaction", k)
		}
	}
	for id, seq := range sequences(t, path) {
		if seq != wantSeq[id] {
			t.Errorf("history %s: sequence %d, want %d", id, seq, wantSeq[id])
		}
	}
	// The last-good copy is of the compacted file.
	if lg := fileSize(t, LastGoodPath(path)); lg > grown/4 {
		t.Errorf("last-good copy of %d bytes", lg)
	}
	s = open(t, path, Options{CompactMinSize: 4 << 20})
	if s.Report().Compacted {
		t.Fatal("compacted twice")
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// sequences are the histories' bucket sequences.
func sequences(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]uint64{}
	db.View(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketExecutions)
		return all.ForEachBucket(func(k []byte) error {
			out[string(k)] = all.Bucket(k).Sequence()
			return nil
		})
	})
	return out
}

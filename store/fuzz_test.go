package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpen: no bytes in the database file make Open or Recover panic or
// crash the process (a fault reading the memory map would), and a
// database Recover salvaged opens.
//
//	go test -run '^$' -fuzz FuzzOpen ./store/
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.db")
	s, err := Open(path, Options{})
	if err != nil {
		f.Fatal(err)
	}
	n := 1
	if err := s.PutSession(&Record{ID: "a", Labels: map[string]string{"k": "v"}}); err != nil {
		f.Fatal(err)
	}
	if err := s.PutTemplate(&Template{Name: "t", Rootfs: "host", PoolSize: &n}); err != nil {
		f.Fatal(err)
	}
	if err := s.AddExecutions([]Executed{{SessionID: "a", Execution: &Execution{ID: "e", SessionID: "a", Stdout: "hi"}}}); err != nil {
		f.Fatal(err)
	}
	s.Close()
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add(seed[:4096+100])
	f.Add([]byte{})
	f.Add([]byte("not a database"))

	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "sandboxd.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		o := Options{Timeout: time.Second, CompactMinSize: -1}
		if _, err := Recover(path, o); err != nil {
			if _, statErr := os.Stat(path); statErr != nil {
				t.Fatalf("a failed recover lost the file: %v", statErr)
			}
			// Nothing to salvage from (no last-good copy here): Open
			// must still only answer an error.
			if s, err := Open(path, o); err == nil {
				use(t, s)
			}
			return
		}
		s, err := Open(path, o)
		if err != nil {
			var newer newerSchema
			if errors.As(err, &newer) {
				return
			}
			t.Fatalf("open after recover: %v", err)
		}
		use(t, s)
	})
}

// use reads everything and writes once, as a daemon would at start.
func use(t *testing.T, s *Store) {
	t.Helper()
	defer s.Close()
	recs, _ := s.Sessions()
	_, _ = s.Templates()
	for _, r := range recs {
		_, _ = s.Executions(r.ID, 0)
	}
	_ = s.PutSession(&Record{ID: "fuzz"})
	_ = s.AddExecutions([]Executed{{SessionID: "fuzz", Execution: &Execution{ID: "e"}}})
	_ = s.DeleteSession("fuzz")
}

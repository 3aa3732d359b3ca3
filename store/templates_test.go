package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestTemplates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path, Options{})
	n := 2
	for _, name := range []string{"b", "a"} {
		if err := s.PutTemplate(&Template{Name: name, Rootfs: "host", Preload: "import json", PoolSize: &n}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open(t, path, Options{})
	got, err := s.Templates()
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Preload != "import json" || *got[1].PoolSize != 2 {
		t.Fatalf("templates after reopen: %+v, %v", got, err)
	}
	if err := s.DeleteTemplate("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate("missing"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Templates(); len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("after delete: %+v", got)
	}
}

// TestMigrationOneToTwo upgrades a version 1 database: its sessions stay,
// and it gains the templates bucket.
func TestMigrationOneToTwo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := migrations[0](tx); err != nil {
			return err
		}
		if err := tx.Bucket(bucketSessions).Put([]byte("old"), []byte(`{"id":"old"}`)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte("1"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, path, Options{})
	if _, err := s.GetSession("old"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Templates(); err != nil {
		t.Fatalf("templates after migration: %v", err)
	}
}

package store

import (
	"fmt"
	"path/filepath"
	"strings"
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
	if err := s.PutTemplate(&Template{Name: "u", Rootfs: "host", User: &TemplateUser{Name: "user", Home: "/home/user"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path, Options{})
	if got, _ := s.Templates(); len(got) != 3 || got[2].User == nil || *got[2].User != (TemplateUser{Name: "user", Home: "/home/user"}) || got[0].User != nil {
		t.Fatalf("a template's user after reopen: %+v", got)
	}
	if err := s.DeleteTemplate(0, "u"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(0, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(0, "missing"); err != nil {
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

// TestTemplatesPerOwner: two owners keep a template of the same name,
// each under its own key, and deleting one leaves the other.
func TestTemplatesPerOwner(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"), Options{})
	for _, owner := range []uint32{0, 1000, 1001} {
		if err := s.PutTemplate(&Template{Name: "data-science", Rootfs: "host", OwnerUID: owner, Preload: fmt.Sprint(owner)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Templates(); len(got) != 3 {
		t.Fatalf("templates: %+v", got)
	}
	if err := s.DeleteTemplate(1000, "data-science"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Templates()
	owners := map[uint32]string{}
	for _, tm := range got {
		owners[tm.OwnerUID] = tm.Preload
	}
	if len(got) != 2 || owners[0] != "0" || owners[1001] != "1001" {
		t.Fatalf("after deleting uid 1000's: %v", owners)
	}
}

// TestMigrationTwoToThree upgrades a version 2 database, whose templates
// were keyed by name alone: a member's template moves to "uid/name" and
// its sessions follow it (every other field of theirs kept), root's stays.
func TestMigrationTwoToThree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, m := range migrations[:2] {
			if err := m(tx); err != nil {
				return err
			}
		}
		put := func(b []byte, k, v string) {
			if err == nil {
				err = tx.Bucket(b).Put([]byte(k), []byte(v))
			}
		}
		put(bucketTemplates, "data-science", `{"name":"data-science","rootfs":"host","owner_uid":1000,"preload":"import os"}`)
		put(bucketTemplates, "shared", `{"name":"shared","rootfs":"host","owner_uid":0}`)
		put(bucketSessions, "s1", `{"id":"s1","owner_uid":1000,"template":"data-science","future_field":7}`)
		put(bucketSessions, "s2", `{"id":"s2","owner_uid":1000,"template":"shared"}`)
		put(bucketSessions, "s3", `{"id":"s3","owner_uid":0,"template":"python"}`)
		put(bucketMeta, string(keyVersion), "2")
		return err
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, path, Options{})
	tmpls, err := s.Templates()
	if err != nil || len(tmpls) != 2 {
		t.Fatalf("templates after migration: %+v, %v", tmpls, err)
	}
	for id, want := range map[string]string{"s1": "1000/data-science", "s2": "shared", "s3": "python"} {
		r, err := s.GetSession(id)
		if err != nil || r.Template != want {
			t.Fatalf("session %s after migration: %+v, %v; want template %q", id, r, err, want)
		}
	}
	if err := s.DeleteTemplate(1000, "data-science"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Templates(); len(got) != 1 || got[0].Name != "shared" {
		t.Fatalf("the member's template is not under its new key: %+v", got)
	}
	s.Close()
	db, err = bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(bucketSessions).Get([]byte("s1"))); !strings.Contains(v, `"future_field":7`) {
			t.Errorf("the migration lost a field of a session record: %s", v)
		}
		return nil
	})
}

package keys

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
)

func TestCreateCheckRevoke(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, k, err := s.Create("ci")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, Prefix) || len(key) != len(Prefix)+40 {
		t.Fatalf("key %q: want e2b_ and 40 hex digits", key)
	}
	b, err := os.ReadFile(filepath.Join(dir, fileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key[len(Prefix):]) {
		t.Fatal("the key itself is stored")
	}
	st, err := os.Stat(filepath.Join(dir, fileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("keys file mode %v, want 0600", st.Mode().Perm())
	}
	got, ok, err := s.Check(key)
	if err != nil || !ok || got.ID != k.ID {
		t.Fatalf("Check = %+v %v %v", got, ok, err)
	}
	for _, bad := range []string{"", "e2b_", key + "0", strings.TrimPrefix(key, Prefix), "e2b_" + strings.Repeat("0", 40)} {
		if _, ok, _ := s.Check(bad); ok {
			t.Errorf("Check(%q) passed", bad)
		}
	}
	if _, err := s.Revoke("nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("Revoke(nope) = %v", err)
	}
	if _, err := s.Revoke("ci"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Check(key); ok {
		t.Fatal("a revoked key still passes")
	}
}

func TestRevokeByAmbiguousName(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, a, _ := s.Create("same")
	if _, _, err := s.Create("same"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revoke("same"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Revoke of an ambiguous name = %v", err)
	}
	if _, err := s.Revoke(a.ID); err != nil {
		t.Fatal(err)
	}
	ks, _ := s.List()
	if len(ks) != 1 {
		t.Fatalf("%d keys left, want 1", len(ks))
	}
}

func TestBadName(t *testing.T) {
	t.Parallel()
	s, _ := Open(t.TempDir())
	if _, _, err := s.Create("a\nb"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Create(two lines) = %v", err)
	}
}

// TestCheckCachesUntilTheFileChanges is the gateway's store beside another
// process's (`sandboxctl e2b key rm`): requests do not re-read an
// unchanged file, and a key revoked elsewhere is refused by the next one.
func TestCheckCachesUntilTheFileChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw, _ := Open(dir)
	cli, _ := Open(dir)
	key, k, err := cli.Create("ci")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := cli.Create("other")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, ok, err := gw.Check(key); !ok || err != nil {
			t.Fatalf("Check = %v %v", ok, err)
		}
	}
	if gw.reads != 1 {
		t.Fatalf("an unchanged file was read %d times, want 1", gw.reads)
	}
	if _, err := cli.Revoke(k.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := gw.Check(key); ok {
		t.Fatal("a key revoked by another store still passes")
	}
	if _, ok, _ := gw.Check(other); !ok {
		t.Fatal("the key left is refused")
	}
	if gw.reads != 2 {
		t.Fatalf("%d reads after one change, want 2", gw.reads)
	}
	// An edit in place (same inode) is seen too.
	p := filepath.Join(dir, fileName)
	if err := os.WriteFile(p, []byte("[]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := gw.Check(other); ok {
		t.Fatal("a key removed by an edit in place still passes")
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if ks, err := gw.List(); err != nil || len(ks) != 0 {
		t.Fatalf("List after the file is gone = %v %v", ks, err)
	}
}

// TestRootKeepsTheFolderOwner: root's `sandboxctl e2b key create` in the
// packaged gateway's folder leaves a file its user can still read.
func TestRootKeepsTheFolderOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own a file for another user")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	s, _ := Open(dir)
	if _, _, err := s.Create("root's"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, fileName))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
		t.Fatalf("keys file owned by %d:%d, want the folder's 65534:65534", st.Uid, st.Gid)
	}
}

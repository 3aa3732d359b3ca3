package daemon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/isolation"
)

// TestEtcNamesMatchWriteEtc: a file's owner is named as the sandbox's own
// /etc/passwd and /etc/group name it.
func TestEtcNamesMatchWriteEtc(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc")
	if err := isolation.WriteEtc(dir, "", 1000, 1000); err != nil {
		t.Fatal(err)
	}
	users, groups := isolation.EtcNames(1000, 1000, "")
	for file, names := range map[string]map[int]string{"passwd": users, "group": groups} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != len(names) {
			t.Fatalf("%s has %d entries, EtcNames %d", file, len(lines), len(names))
		}
		for _, l := range lines {
			f := strings.Split(l, ":")
			id, _ := strconv.Atoi(f[2])
			if names[id] != f[0] {
				t.Errorf("%s: %d is %s, EtcNames says %q", file, id, f[0], names[id])
			}
		}
	}
	// Under a user namespace the host ids are the block's.
	name := etcNames(101000, 101000, 1000, "")
	for _, c := range []struct {
		uid, gid    uint32
		user, group string
	}{
		{101000, 101000, "sandbox", "sandbox"},
		{100000, 100005, "root", "tty"},
		{100042, 100042, "42", "42"},
		{0, 0, "nobody", "nogroup"},
	} {
		if u, g := name(c.uid, c.gid); u != c.user || g != c.group {
			t.Errorf("%d:%d is %s:%s, want %s:%s", c.uid, c.gid, u, g, c.user, c.group)
		}
	}
	// A template's user names the sandbox's uid and gid.
	if u, g := etcNames(101000, 101000, 1000, "user")(101000, 101000); u != "user" || g != "user" {
		t.Errorf("a template user's files are %s:%s, want user:user", u, g)
	}
}

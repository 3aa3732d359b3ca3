package isolation

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEtcForUser: a template's user gets an /etc of the image's with its
// own passwd and group (its name for uid and gid 1000, its home, bash
// when the image has it); the default user gets the image's own.
func TestEtcForUser(t *testing.T) {
	state := t.TempDir()
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"etc", "bin", "home/someone"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bin/bash"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID=test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{stateDir: state, uid: 1000, gid: 1000}
	img := &Image{Rootfs: root, etc: filepath.Join(state, "images", "t", "etc"), links: map[string]string{},
		binds: []bind{{src: filepath.Join(root, "bin"), dst: "/bin"}, {src: filepath.Join(root, "home"), dst: "/home"}}}
	if err := WriteEtc(img.etc, filepath.Join(root, "etc"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if dir, err := r.etcFor(img, User{}); err != nil || dir != img.etc {
		t.Fatalf("the default user's /etc is %s (%v), want the image's %s", dir, err, img.etc)
	}
	u := User{Name: "user", Home: "/home/user"}
	dir, err := r.etcFor(img, u)
	if err != nil {
		t.Fatal(err)
	}
	if dir == img.etc {
		t.Fatal("a template user's /etc is the image's")
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if p := read("passwd"); !strings.Contains(p, "\nuser:x:1000:1000:user:/home/user:/bin/bash\n") || strings.Contains(p, "sandbox") {
		t.Errorf("passwd:\n%s", p)
	}
	if g := read("group"); !strings.Contains(g, "\nuser:x:1000:\n") {
		t.Errorf("group:\n%s", g)
	}
	if read("os-release") != "ID=test\n" {
		t.Error("the image's own /etc files are not in the user's copy")
	}
	if p, _ := os.ReadFile(filepath.Join(img.etc, "passwd")); !strings.Contains(string(p), "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh") {
		t.Errorf("the image's /etc changed:\n%s", p)
	}
	users, groups := EtcNames(1000, 1000, "user")
	if users[1000] != "user" || groups[1000] != "user" {
		t.Errorf("EtcNames: %v %v", users, groups)
	}
	// The image's /home gives way to the user's home.
	v := img.forUser(u)
	if len(v.binds) != 1 || v.binds[0].dst != "/bin" || len(img.binds) != 2 {
		t.Errorf("binds for the user: %v (the image's: %v)", v.binds, img.binds)
	}
	if img.forUser(User{}) != img {
		t.Error("the default user's view of the image is not the image")
	}
	env := sandboxEnv(&Spec{User: u})
	if !slices.Contains(env, "HOME=/home/user") || !slices.Contains(env, "USER=user") {
		t.Errorf("env: %v", env)
	}
}

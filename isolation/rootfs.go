package isolation

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// systemDirs are the host folders the "host" root filesystem shows,
// read-only. Where the host has a symlink (merged /usr), the sandbox gets the
// same symlink.
var systemDirs = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr"}

// mountpoints every sandbox root needs, besides the system folders.
var mountpoints = []string{"proc", "dev", "sys", "etc", "workspace", "tmp"}

// makeSkeleton makes an empty root for one sandbox: only mountpoints (extra
// ones too, absolute: PackagesDir if its template has packages) and the
// image's symlinks. Every sandbox gets its own, so the runtime never has
// to create a mountpoint in a root another sandbox shares.
func makeSkeleton(root string, img *Image, extra ...string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for _, d := range append(slices.Clip(mountpoints), extra...) {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for _, b := range img.binds {
		if err := os.Mkdir(filepath.Join(root, b.dst), 0o755); err != nil && !os.IsExist(err) {
			return err
		}
	}
	for name, target := range img.links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}

// WriteEtc writes the synthetic /etc every sandbox sees: users and groups
// of the sandbox alone, name resolution with no servers, and the dynamic
// linker's cache (without which binaries from multiarch folders do not
// load). From the host's /etc (src "") only the harmless parts in hostEtc
// are copied; from an image's (src its /etc), everything every user may
// read, then the synthetic files over it.
func WriteEtc(dir, src string, uid, gid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if src == "" {
		for _, name := range hostEtc {
			if err := copyTree(filepath.Join("/etc", name), filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("copy /etc/%s: %w", name, err)
			}
		}
	} else {
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("copy /etc/%s: %w", e.Name(), err)
			}
		}
	}
	passwd, group := etcUsers(uid, gid, User{}, "/bin/sh")
	files := map[string]string{
		"passwd":        passwd,
		"group":         group,
		"hosts":         "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      "sandbox\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
		"resolv.conf":   resolvConf,
		"ld.so.conf":    "include /etc/ld.so.conf.d/*.conf\n",
	}
	for name, content := range files {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err == nil && fi.IsDir() {
			_ = os.RemoveAll(filepath.Join(dir, name)) // an image's odd /etc
		}
		if err := writeFileAtomic(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	_ = os.RemoveAll(filepath.Join(dir, "mtab"))
	return os.Symlink("/proc/self/mounts", filepath.Join(dir, "mtab"))
}

// EtcNames are the users and groups of the synthetic /etc/passwd and
// /etc/group WriteEtc (or, for a user of a template's, etcFor) writes for
// a sandbox whose code runs as uid and gid (as it sees them) named name
// ("": the default user's): how the sandbox names a file's owner.
func EtcNames(uid, gid int, name string) (users, groups map[int]string) {
	name = User{Name: name}.UserName()
	return map[int]string{0: "root", uid: name, 65534: "nobody"},
		map[int]string{0: "root", 5: "tty", gid: name, 65534: "nogroup"}
}

// resolvConf is every sandbox's: DNS to any address reaches the daemon's
// DNS when the sandbox has a network (the daemon's table redirects it), so
// one nameserver serves all; without a network it is unreachable, and
// lookups fail at once.
const resolvConf = "# sandboxd: DNS is the daemon's, for sandboxes with a network\nnameserver " + DNSAddr + "\n"

// DNSAddr is the nameserver of sandboxes: link-local, so that nothing but
// the daemon's redirect ever answers it.
const DNSAddr = "169.254.0.53"

// hostEtc are the parts of the host's /etc that programs in a sandbox
// need and that hold no secrets: the dynamic linker's cache, the
// alternatives symlinks, CA certificates (public), and the system-wide
// configuration Python packages read (Debian's matplotlib refuses to
// import without /etc/matplotlibrc).
var hostEtc = []string{
	"ld.so.cache", "ld.so.conf.d", "alternatives", "ssl/certs", "ssl/openssl.cnf", "ca-certificates.conf",
	"matplotlibrc", "fonts", "mime.types", "protocols", "services", "localtime", "timezone",
	"gai.conf", "host.conf", "magic", "inputrc", "bash.bashrc", "profile", "python3", "python3.11",
}

// copyTree copies a file, symlink or folder from the host. Only what every
// user may read is copied, and nothing but files, folders and symlinks: a
// secret that slipped into the list above would still be left out.
func copyTree(src, dst string) error {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		_ = os.RemoveAll(dst)
		return os.Symlink(t, dst)
	case fi.IsDir():
		if fi.Mode().Perm()&0o005 != 0o005 {
			return nil
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 != 0:
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		b, err := io.ReadAll(io.LimitReader(in, 64<<20))
		if err != nil {
			return err
		}
		// Readable by all, executable where it was (the agent's native
		// supervisor, in a template user's copy of /etc); never set-id.
		return writeFileAtomic(dst, b, 0o644|fi.Mode().Perm()&0o111)
	}
	return nil
}

// writeFileAtomic writes a file so that readers see the old or the new
// content, never a part.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

package isolation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// User is who sandboxed code is by name: the passwd entry of the uid it
// runs as, and its home. The zero User is every sandbox's default:
// "sandbox", at home in /workspace. A template may name another (E2B's
// sandboxes have "user" at /home/user): the session's workspace is then
// shown at its home too, and code starts there.
type User struct {
	Name string
	Home string
}

// Default user of sandboxes (the zero User).
const (
	DefaultUserName = "sandbox"
	DefaultUserHome = "/workspace"
)

// UserName is the user's name.
func (u User) UserName() string {
	if u.Name == "" {
		return DefaultUserName
	}
	return u.Name
}

// HomeDir is the user's home, where code starts.
func (u User) HomeDir() string {
	if u.Home == "" {
		return DefaultUserHome
	}
	return u.Home
}

// isDefault says the user is the default one, whose /etc is the image's.
func (u User) isDefault() bool {
	return u.UserName() == DefaultUserName && u.HomeDir() == DefaultUserHome
}

// homeMount is where the workspace is shown a second time: the user's
// home, unless that is /workspace itself.
func (u User) homeMount() string {
	if h := u.HomeDir(); h != DefaultUserHome {
		return h
	}
	return ""
}

// etcUsers are the synthetic /etc/passwd and /etc/group of a sandbox whose
// code runs as uid and gid, named and at home as u says, with shell.
func etcUsers(uid, gid int, u User, shell string) (passwd, group string) {
	name := u.UserName()
	passwd = fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n"+
		"%s:x:%d:%d:%s:%s:%s\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", name, uid, gid, name, u.HomeDir(), shell)
	group = fmt.Sprintf("root:x:0:\ntty:x:5:\n%s:x:%d:\nnogroup:x:65534:\n", name, gid)
	return passwd, group
}

// etcFor is the /etc sandboxes of img see when their code is u: the
// image's own for the default user, else a copy of it with u's passwd and
// group, kept beside it. The copy is rewritten in place (file by file, as
// WriteEtc rewrites the image's) the first time this runtime needs it,
// never removed: sandboxes a previous daemon left running still show it.
func (r *Runtime) etcFor(img *Image, u User) (string, error) {
	if u.isDefault() {
		return img.etc, nil
	}
	dir := filepath.Join(filepath.Dir(img.etc), "etc-users", u.UserName()+strings.ReplaceAll(u.HomeDir(), "/", "_"))
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	if r.etcDone[dir] {
		return dir, nil
	}
	if err := copyTree(img.etc, dir); err != nil {
		return "", fmt.Errorf("copy /etc for user %s: %w", u.UserName(), err)
	}
	shell := "/bin/sh"
	if img.has("/bin/bash") {
		shell = "/bin/bash"
	}
	passwd, group := etcUsers(r.UID(), r.GID(), u, shell)
	for name, content := range map[string]string{"passwd": passwd, "group": group} {
		if err := writeFileAtomic(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if r.etcDone == nil {
		r.etcDone = map[string]bool{}
	}
	r.etcDone[dir] = true
	return dir, nil
}

// has says the image has an executable at path (inside it, following its
// symlinks as the sandbox would).
func (i *Image) has(path string) bool {
	host := path
	if i.Rootfs != "" {
		var err error
		if host, err = securejoin.SecureJoin(i.Rootfs, path); err != nil {
			return false
		}
	}
	fi, err := os.Stat(host)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// forUser is img as a sandbox whose user is u sees it: a home under
// /home hides the image's own /home (its users' homes are not the
// sandbox's, and a read-only /home could not take the home's mountpoint).
func (i *Image) forUser(u User) *Image {
	h := u.homeMount()
	if h == "" {
		return i
	}
	top := "/" + strings.SplitN(strings.TrimPrefix(h, "/"), "/", 2)[0]
	v := *i
	v.binds = nil
	for _, b := range i.binds {
		if b.dst != top {
			v.binds = append(v.binds, b)
		}
	}
	if _, ok := i.links[strings.TrimPrefix(top, "/")]; ok {
		v.links = map[string]string{}
		for k, t := range i.links {
			if "/"+k != top {
				v.links[k] = t
			}
		}
	}
	return &v
}

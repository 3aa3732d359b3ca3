// Package sandboxfs serves a sandbox's /workspace and /tmp to the file API
// from the host side, without ever following the sandbox's symlinks out.
//
// A path from a client is first checked lexically (Split): it must name
// something under /workspace or /tmp, with no ".." at all. It is then opened
// component by component below the root's directory fd with openat2 and
// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so a symlink the sandboxed code
// planted — absolute, or climbing with "..", or swapped in mid-request — can
// only fail the request (EXDEV), never reach outside.
package sandboxfs

import (
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// Root names one of the folders the file API serves.
type Root int

const (
	// Workspace is /workspace, where relative paths start.
	Workspace Root = iota
	// Tmp is /tmp.
	Tmp
	// Volume is a volume's root, served without a session (FS.Workspace
	// is its folder): its paths are "/" and below.
	Volume
)

func (r Root) String() string {
	switch r {
	case Tmp:
		return "/tmp"
	case Volume:
		return ""
	}
	return "/workspace"
}

// MaxPath bounds a client path, as PATH_MAX does.
const MaxPath = 4096

// Split checks a client path and returns the root it is under and the
// clean path relative to it ("" for the root itself).
func Split(p string) (Root, string, error) { return split("path", p) }

// Cwd checks an execution's working folder as Split checks a path, and
// returns it whole, absolute in the sandbox: relative to /workspace and
// confined to it or /tmp (code may still cd anywhere it can read; what
// the API takes is what the file API serves).
func Cwd(p string) (string, error) {
	root, rel, err := split("cwd", p)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return root.String(), nil
	}
	return root.String() + "/" + rel, nil
}

// SplitVolume checks a path in a volume, as Split checks one in a session:
// every path is under the volume's root ("/" or "" is the root itself).
func SplitVolume(p string) (string, error) {
	if p == "" {
		p = "/"
	}
	_, rel, err := split("path", "/workspace/"+strings.TrimLeft(p, "/"))
	if err != nil {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "bad path %s: %s", api.Quote(p), strings.TrimPrefix(err.Error(), "bad path "+api.Quote("/workspace/"+strings.TrimLeft(p, "/"))+": "))
	}
	return rel, nil
}

func split(what, p string) (Root, string, error) {
	bad := func(why string) (Root, string, error) {
		return 0, "", api.Errorf(errdefs.ErrInvalidArgument, "bad %s %s: %s", what, api.Quote(p), why)
	}
	if p == "" {
		return bad("a path is required")
	}
	if len(p) > MaxPath {
		return bad("longer than 4096 bytes")
	}
	if strings.ContainsRune(p, 0) {
		return bad("contains a NUL byte")
	}
	root := Workspace
	rest := p
	if strings.HasPrefix(p, "/") {
		first, after, _ := strings.Cut(strings.TrimLeft(p, "/"), "/")
		switch first {
		case "workspace":
			root = Workspace
		case "tmp":
			root = Tmp
		default:
			return bad("only paths under /workspace and /tmp are served")
		}
		rest = after
	}
	var parts []string
	for _, c := range strings.Split(rest, "/") {
		switch c {
		case "", ".":
		case "..":
			return bad(`".." is not allowed`)
		default:
			parts = append(parts, c)
		}
	}
	return root, strings.Join(parts, "/"), nil
}

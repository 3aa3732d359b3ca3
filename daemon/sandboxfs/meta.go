package sandboxfs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// A file's user metadata is its user. extended attributes, written by the
// daemon on the host's side of the session's folder: the sandbox's own
// view (runsc's gofer, say) plays no part. Its bounds keep every set of
// it within what ext4 holds for one inode (one 4 KiB block, each entry
// with its header), so that a write refused for space is rare and said.
const (
	// MaxMetaKeys is the most keys a file's metadata has.
	MaxMetaKeys = 32
	// MaxMetaKey is the longest key, in bytes.
	MaxMetaKey = 128
	// MaxMetaBytes bounds a file's metadata, its keys and values.
	MaxMetaBytes = 2048
)

// xattrPrefix is the namespace of the attributes metadata is kept as.
const xattrPrefix = "user."

// CheckMeta checks metadata to be written: keys of HTTP's token
// characters, lower case (header names know no case), values printable
// ASCII (what a header carries unchanged), within the bounds above.
func CheckMeta(meta map[string]string) error {
	if len(meta) > MaxMetaKeys {
		return api.Errorf(errdefs.ErrInvalidArgument, "the metadata has %d keys: at most %d", len(meta), MaxMetaKeys)
	}
	total := 0
	for k, v := range meta {
		if k == "" || len(k) > MaxMetaKey || strings.IndexFunc(k, func(c rune) bool { return !isTokenChar(c) || ('A' <= c && c <= 'Z') }) >= 0 {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad metadata key %s: 1 to %d lower-case letters, digits or !#$%%&'*+-.^_`|~", api.Quote(k), MaxMetaKey)
		}
		if strings.IndexFunc(v, func(c rune) bool { return c < 0x20 || c > 0x7e }) >= 0 {
			return api.Errorf(errdefs.ErrInvalidArgument, "bad metadata value of %s: printable ASCII only", api.Quote(k))
		}
		total += len(k) + len(v)
	}
	if total > MaxMetaBytes {
		return api.Errorf(errdefs.ErrInvalidArgument, "the metadata is %d bytes of keys and values: at most %d", total, MaxMetaBytes)
	}
	return nil
}

// isTokenChar reports whether c may be in an HTTP token (RFC 9110).
func isTokenChar(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// setMeta writes metadata (checked) on the open file fd.
func setMeta(fd int, meta map[string]string) error {
	for k, v := range meta {
		err := unix.Fsetxattr(fd, xattrPrefix+k, []byte(v), 0)
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOTSUP):
			return api.Errorf(errdefs.ErrInvalidArgument, "the session's disk keeps no user extended attributes, which file metadata is kept as: write the file without metadata")
		case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.E2BIG), errors.Is(err, unix.ERANGE):
			return api.Errorf(errdefs.ErrInvalidArgument, "the file system has no room for this metadata on one file: give less (%v)", err)
		default:
			return fmt.Errorf("metadata %s: %w", k, err)
		}
	}
	return nil
}

// metaOf is the user metadata of name in the folder dir (name "" is dir
// itself), nil when it has none or cannot say. Only files and folders
// have any: Linux keeps no user attributes on a symlink or a device.
// The file is opened O_PATH (no open for reading seen by inotify, no
// device opened) and its attributes read through /proc's link to it.
func metaOf(dir int, name string, mode uint32) map[string]string {
	if t := mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return nil
	}
	fd := dir
	if name != "" {
		var err error
		if fd, err = unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return nil
		}
		defer unix.Close(fd)
	}
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	names, err := listXattr(p)
	if err != nil {
		return nil
	}
	var out map[string]string
	for _, n := range names {
		k, ok := strings.CutPrefix(n, xattrPrefix)
		if !ok || k == "" {
			continue
		}
		v, err := getXattr(p, n)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// listXattr is the attribute names of path (followed).
func listXattr(path string) ([]string, error) {
	for {
		n, err := unix.Listxattr(path, nil)
		if err != nil || n == 0 {
			return nil, err
		}
		buf := make([]byte, n)
		n, err = unix.Listxattr(path, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // grew since
		}
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00"), nil
	}
}

// getXattr is the value of path's attribute name (path followed).
func getXattr(path, name string) (string, error) {
	for {
		n, err := unix.Getxattr(path, name, nil)
		if err != nil || n == 0 {
			return "", err
		}
		buf := make([]byte, n)
		n, err = unix.Getxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		return string(buf[:n]), err
	}
}

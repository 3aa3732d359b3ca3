package sandboxfs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// Folders travel as tar streams (cp -r). Both ways the daemon reaches
// nothing by a name the sandbox could have changed into a symlink: every
// step is an openat below a descriptor with RESOLVE_BENEATH, symlinks are
// copied as symlinks and never followed, and anything else that is not a
// file or folder (devices, fifos, sockets, hard links) is left out.

// maxTarEntries bounds the entries of one tar stream.
const maxTarEntries = 100000

// TarMIME is the type of a tar stream in the files API.
const TarMIME = "application/x-tar"

// ReadTar writes rel (a folder, its contents under its own name; or a
// file) to w as a tar stream.
func (f *FS) ReadTar(r Root, rel string, w io.Writer) error {
	base := path.Base("/" + rel)
	if rel == "" {
		base = strings.TrimPrefix(r.String(), "/")
	}
	return f.readTar(r, rel, base, w)
}

// ReadTarContents writes what root r holds to w as a tar stream, its
// entries named from r ("./dir/file"): what WriteTar at r's top puts back
// where it was (a snapshot of /workspace).
func (f *FS) ReadTarContents(r Root, w io.Writer) error { return f.readTar(r, "", ".", w) }

// readTar writes rel to w under the name base.
func (f *FS) readTar(r Root, rel, base string, w io.Writer) error {
	root, err := f.rootDir(r)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	tw := tar.NewWriter(w)
	n := 0
	dirRel, name := splitName(rel)
	var parent int
	if rel == "" {
		parent, name = root, "."
	} else {
		if parent, err = openBeneath(root, dirRel, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
			return classify(r, dirRel, err)
		}
		defer unix.Close(parent)
	}
	if err := addTar(tw, parent, name, base, &n); err != nil {
		return classify(r, rel, err)
	}
	return tw.Close()
}

// addTar adds dirfd's entry name to tw as tarName, and a folder's
// contents below it.
func addTar(tw *tar.Writer, dirfd int, name, tarName string, n *int) error {
	if *n++; *n > maxTarEntries {
		return fmt.Errorf("more than %d entries", maxTarEntries)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	h := &tar.Header{Name: tarName, Mode: int64(st.Mode & 0o7777), ModTime: time.Unix(st.Mtim.Unix()).UTC(), Format: tar.FormatPAX}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		h.Typeflag, h.Name = tar.TypeDir, tarName+"/"
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		dir := os.NewFile(uintptr(fd), tarName)
		defer dir.Close()
		names, err := dir.Readdirnames(-1)
		if err != nil {
			return err
		}
		for _, e := range names {
			if err := addTar(tw, fd, e, tarName+"/"+e, n); err != nil {
				return err
			}
		}
		return nil
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		k, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, string(buf[:k])
		return tw.WriteHeader(h)
	case unix.S_IFREG:
		fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		file := os.NewFile(uintptr(fd), tarName)
		defer file.Close()
		h.Typeflag, h.Size = tar.TypeReg, st.Size
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		// The size is the header's: a file that grew is cut, one that
		// shrank is padded, and the stream stays whole.
		k, err := io.Copy(tw, io.LimitReader(file, st.Size))
		if err != nil {
			return err
		}
		_, err = io.CopyN(tw, zeros{}, st.Size-k)
		return err
	}
	return nil // not a file, folder or symlink: left out
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TarWritten is what WriteTar made.
type TarWritten struct {
	Files int
	Bytes int64
}

// WriteTar unpacks a tar stream into the folder rel (made as needed):
// folders, files (replaced whole, as Write does) and symlinks (made as
// they are, never followed). An entry that would leave rel ("..", an
// absolute name) fails the whole; other kinds are skipped. At most limit
// bytes of file content are taken. An entry that cannot be unpacked as it
// stands (a symlink or file where a folder is: a folder is never
// replaced; anything under a file; a symlink loop; a stream cut inside a
// file) is the client's error, errdefs.ErrInvalidArgument.
func (f *FS) WriteTar(r Root, rel string, src io.Reader, limit int64) (*TarWritten, error) {
	root, err := f.rootDir(r)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	top, err := f.mkdirAll(root, rel)
	if err != nil {
		return nil, classify(r, rel, err)
	}
	defer unix.Close(top)
	out := &TarWritten{}
	tr := tar.NewReader(src)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, api.Errorf(errdefs.ErrInvalidArgument, "not a tar stream: %v", err)
		}
		if n >= maxTarEntries {
			return out, api.Errorf(errdefs.ErrInvalidArgument, "more than %d entries in the tar stream", maxTarEntries)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || name == "" {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return out, api.Errorf(errdefs.ErrInvalidArgument, "the tar entry %s would leave %s", api.Quote(h.Name), r)
		}
		full := name
		if rel != "" {
			full = rel + "/" + name
		}
		dirRel, base := splitName(name)
		switch h.Typeflag {
		case tar.TypeDir:
			fd, err := f.mkdirAll(top, name)
			if err != nil {
				return out, classify(r, full, err)
			}
			unix.Close(fd)
		case tar.TypeReg:
			if h.Size > limit-out.Bytes {
				return out, api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("the tar stream's files are larger than the limit of %d bytes", limit))
			}
			k, err := f.writeAt(top, r, full, dirRel, base, tr, h.Size, os.FileMode(h.Mode&0o777))
			out.Bytes += k
			if err != nil {
				return out, err
			}
			out.Files++
		case tar.TypeSymlink:
			if h.Linkname == "" {
				return out, api.Errorf(errdefs.ErrInvalidArgument, "the tar entry %s is a symlink to nothing", api.Quote(h.Name))
			}
			dir, err := f.mkdirAll(top, dirRel)
			if err != nil {
				return out, classify(r, full, err)
			}
			_ = unix.Unlinkat(dir, base, 0) // a file there is replaced, a folder stays
			err = unix.Symlinkat(h.Linkname, dir, base)
			if err == nil {
				_ = unix.Fchownat(dir, base, f.UID, f.GID, unix.AT_SYMLINK_NOFOLLOW)
			}
			unix.Close(dir)
			if err == unix.EEXIST {
				return out, api.Errorf(errdefs.ErrInvalidArgument, "the tar entry %s is a symlink where %s/%s is a folder (a folder is not replaced)", api.Quote(h.Name), r, full)
			}
			if err != nil {
				return out, classify(r, full, err)
			}
		}
	}
}

// writeAt writes one file of a tar stream below top, as Write does (a
// new file renamed over the old one).
func (f *FS) writeAt(top int, r Root, full, dirRel, base string, src io.Reader, size int64, mode os.FileMode) (int64, error) {
	dir, err := f.mkdirAll(top, dirRel)
	if err != nil {
		return 0, classify(r, full, err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		_ = unix.Unlinkat(dir, base, 0) // the archive's file replaces the link, never writes through it
	}
	tmp := fmt.Sprintf(".%s.upload-%d", base, uploadSeq.Add(1))
	if len(tmp) > 255 {
		tmp = fmt.Sprintf(".upload-%d", uploadSeq.Add(1))
	}
	fd, err := openBeneath(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return 0, classify(r, full, err)
	}
	file := os.NewFile(uintptr(fd), full)
	defer file.Close()
	done := false
	defer func() {
		if !done {
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	}()
	if err := file.Chown(f.UID, f.GID); err != nil {
		return 0, err
	}
	if mode != 0 {
		_ = file.Chmod(mode)
	}
	n, err := io.CopyN(file, src, size)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return n, api.Errorf(errdefs.ErrInvalidArgument, "the tar stream ends inside %s/%s", r, full)
	}
	if err != nil {
		return n, classify(r, full, err)
	}
	if err := unix.Renameat(dir, tmp, dir, base); err != nil {
		return n, classify(r, full, err)
	}
	done = true
	return n, nil
}

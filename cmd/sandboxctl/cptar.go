package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressf says how a long copy went, on a terminal only: a pipe stays
// quiet.
func progressf(format string, args ...any) {
	if term.IsTerminal(int(os.Stderr.Fd())) {
		fmt.Fprintf(os.Stderr, format, args...)
	}
}

// copyDirTo sends the local folder src to the session's folder dst as a
// tar stream: dst/NAME/... as cp -r makes it. Symlinks go as symlinks;
// other special files are left out.
func (a *app) copyDirTo(ctx context.Context, src, id, dst string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, src)) }()
	var body io.Reader = pr
	if bar := progressBar(-1, "sending "+src, false); bar != nil {
		r := progressbar.NewReader(pr, bar)
		body = &r
		defer bar.Finish()
	}
	w, err := a.client().PutTar(ctx, id, dst, body)
	pr.CloseWithError(err)
	if err == nil {
		progressf("copied %d files, %s\n", w.Files, humanBytes(uint64(w.Size)))
	}
	return err
}

// writeTar writes the local folder src to w, under its own name.
func writeTar(w io.Writer, src string) error {
	tw := tar.NewWriter(w)
	base := filepath.Base(filepath.Clean(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(base, filepath.ToSlash(rel))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil // a device, fifo or socket: left out
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = name
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.Uid, h.Gid = "", "", 0, 0
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, h.Size)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", src, err)
	}
	return tw.Close()
}

// copyDirFrom brings the session's folder src into the local folder dst
// (made if missing) as dst/NAME/...; nothing is written outside dst, by
// a name or through a symlink (os.Root).
func (a *app) copyDirFrom(ctx context.Context, id, src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	r, err := a.client().GetTar(ctx, id, src)
	if err != nil {
		return err
	}
	defer r.Close()
	var in io.Reader = r
	if bar := progressBar(-1, "receiving "+src, false); bar != nil {
		pr := progressbar.NewReader(r, bar)
		in = &pr
		defer bar.Finish()
	}
	tr := tar.NewReader(in)
	files, size := 0, int64(0)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("the copy from the session was cut: %w", err)
		}
		name := path.Clean(h.Name)
		if name == "." || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("the session sent an entry %q outside the copy", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, 0o755)
		case tar.TypeSymlink:
			if err = root.MkdirAll(path.Dir(name), 0o755); err == nil {
				_ = root.Remove(name)
				err = root.Symlink(h.Linkname, name)
			}
		case tar.TypeReg:
			if err = root.MkdirAll(path.Dir(name), 0o755); err != nil {
				break
			}
			_ = root.Remove(name) // a symlink there is replaced, not written through
			var f *os.File
			if f, err = root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(h.Mode&0o777)); err != nil {
				break
			}
			var n int64
			n, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			files++
			size += n
		}
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", filepath.Join(dst, filepath.FromSlash(name)), err)
		}
	}
	progressf("copied %d files, %s\n", files, humanBytes(uint64(size)))
	return nil
}

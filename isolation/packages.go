package isolation

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A template may list packages installed when it is added. They are
// installed in a trial sandbox (pip install --target, so the build code of
// a source package runs sandboxed like any other code), then copied out of
// its workspace into a packages folder the daemon keeps:
//
//	<folder>/site/                  pip's --target: modules, .pth files, bin/
//	<folder>/boot/sitecustomize.py  puts site/ on sys.path
//
// Every sandbox of the template sees the folder read-only at PackagesDir.
// PYTHONPATH names boot/, whose sitecustomize adds site/ as a site folder:
// after the user's own packages (pip --user into /workspace) and the
// system's, so a session installs a newer version over the template's,
// and with site/'s .pth files read, as pip's own installs are.

// PackagesDir is where a sandbox sees its template's packages folder.
const PackagesDir = "/packages"

// PackagesSite is the folder pip installs into, inside the folder.
const PackagesSite = PackagesDir + "/site"

// packagesEnv is the environment of a sandbox whose template has packages:
// the folder's scripts come after the system's.
var packagesEnv = []string{
	"PYTHONPATH=" + PackagesDir + "/boot",
	"PATH=" + basePath + ":" + PackagesSite + "/bin",
}

// sitecustomize adds the site folder; an image's own sitecustomize (which
// this one hides on sys.path) still runs after it.
const sitecustomize = `# Written by sandboxd: this template's packages (see ` + PackagesDir + `).
import site as _site
_site.addsitedir(` + "'" + PackagesSite + "'" + `)


def _chain():
    import importlib.machinery, importlib.util, os, sys
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except OSError:
        pass  # a dangling link (Debian's points into /etc)


_chain()
del _chain, _site
`

// WritePackages makes dst a template's packages folder of folder name of
// workspace, the host folder of a trial sandbox's /workspace, where its
// pip installed. All of it was written by sandboxed code: name is looked
// up inside workspace (a link to a host folder cannot stand in for it),
// the copy never follows a link, keeps links as links (they resolve
// inside sandboxes), leaves out anything but folders, files and links, and
// makes everything root's and read-only to the rest, without setuid or
// setgid bits. dst must not exist.
func WritePackages(workspace, name, dst string) (retErr error) {
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		return err
	}
	defer ws.Close()
	in, err := ws.OpenRoot(name)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = os.RemoveAll(dst)
		}
	}()
	out, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := out.Mkdir("boot", 0o755); err != nil {
		return err
	}
	if err := writeFile(out, "boot/sitecustomize.py", []byte(sitecustomize), 0o644); err != nil {
		return err
	}
	if err := out.Mkdir("site", 0o755); err != nil {
		return err
	}
	return fs.WalkDir(in.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		to := filepath.Join("site", name)
		switch d.Type() {
		case fs.ModeDir:
			return out.Mkdir(to, 0o755)
		case fs.ModeSymlink:
			target, err := in.Readlink(name)
			if err != nil {
				return err
			}
			return out.Symlink(target, to)
		case 0:
			return copyFileIn(in, out, name, to)
		}
		return nil // fifos, sockets, devices
	})
}

// copyFileIn copies regular file name of in to to in out: 0755 if any
// execute bit was set, else 0644.
func copyFileIn(in, out *os.Root, name, to string) error {
	f, err := in.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil // replaced since it was listed
	}
	mode := os.FileMode(0o644)
	if fi.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	w, err := out.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return errors.Join(err, w.Close())
}

// writeFile writes a new file in root.
func writeFile(root *os.Root, name string, b []byte, mode os.FileMode) error {
	w, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	if err = errors.Join(err, w.Close()); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

package isolation

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// Image is a root filesystem sandboxes start from, prepared once: the
// folders bound read-only into each sandbox's root, the symlinks beside
// them, the /etc sandboxes see, and the interpreter.
type Image struct {
	// Rootfs is the image's folder on the host; "" for the host's own
	// system folders.
	Rootfs string
	binds  []bind
	links  map[string]string
	etc    string
	python string
	// supervisor says the native supervisor is installed beside the
	// agent's modules (Options.Supervisor): sandboxes start with it.
	supervisor bool
	// packages is where a sandbox's view finds its template's packages
	// folder ("": none); set by mountView only.
	packages string
}

// bind is a host folder shown read-only at a path of the sandbox.
type bind struct{ src, dst string }

// Python is the interpreter's path inside the image.
func (i *Image) Python() string { return i.python }

// hostImage is the host's system folders, read-only, with the synthetic
// /etc: the python template's root filesystem.
func (r *Runtime) hostImage() (*Image, error) {
	python, err := findPython()
	if err != nil {
		return nil, err
	}
	img := &Image{links: map[string]string{}, etc: r.etcDir, python: python}
	for _, d := range systemDirs {
		if err := img.add("/"+d, d); err != nil {
			return nil, err
		}
	}
	if err := WriteEtc(img.etc, "", r.UID(), r.GID()); err != nil {
		return nil, fmt.Errorf("write sandbox /etc: %w", err)
	}
	if img.supervisor, err = writeAgent(img.etc, python, r.supervisor); err != nil {
		return nil, err
	}
	return img, nil
}

// add takes the host entry src as the image's top-level entry name: a
// folder is bound, a symlink copied; anything else is left out.
func (i *Image) add(src, name string) error {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		i.links[name] = t
	case fi.IsDir():
		i.binds = append(i.binds, bind{src: src, dst: "/" + name})
	}
	return nil
}

// OpenImage prepares a root filesystem folder for sandboxes: every
// top-level folder of it but the ones each sandbox gets its own of is
// bound read-only, and its /etc is copied (what every user may read) with
// the sandbox's users, hosts and resolver written over it. name keys the
// prepared /etc under the runtime's state.
func (r *Runtime) OpenImage(name, rootfs string) (*Image, error) {
	if !filepath.IsAbs(rootfs) {
		return nil, fmt.Errorf("root filesystem %q is not an absolute path", rootfs)
	}
	fi, err := os.Lstat(rootfs)
	if err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("root filesystem %s is not a folder", rootfs)
	}
	ents, err := os.ReadDir(rootfs)
	if err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	img := &Image{Rootfs: rootfs, links: map[string]string{}, etc: filepath.Join(r.stateDir, "images", name, "etc")}
	for _, e := range ents {
		if slices.Contains(mountpoints, e.Name()) {
			continue
		}
		if err := img.add(filepath.Join(rootfs, e.Name()), e.Name()); err != nil {
			return nil, err
		}
	}
	if img.python, err = findPythonIn(rootfs); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(img.etc)
	src := filepath.Join(rootfs, "etc")
	if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
		src = "" // no /etc of its own (or a symlink out): the synthetic one alone
	}
	if err := WriteEtc(img.etc, src, r.UID(), r.GID()); err != nil {
		return nil, fmt.Errorf("write the image's /etc: %w", err)
	}
	// The image's python may not run on the host: its agent is compiled
	// in the sandbox, at every start.
	if img.supervisor, err = writeAgent(img.etc, "", r.supervisor); err != nil {
		return nil, err
	}
	return img, nil
}

// RemoveImage removes what OpenImage prepared under the runtime's state.
func (r *Runtime) RemoveImage(name string) error {
	return os.RemoveAll(filepath.Join(r.stateDir, "images", name))
}

// pythonPaths are where an image's interpreter may be, first match wins:
// official Python images install to /usr/local, distributions to /usr.
var pythonPaths = []string{"/usr/local/bin/python3", "/usr/bin/python3", "/bin/python3"}

// findPythonIn finds python3 inside a root filesystem, following its
// symlinks as the sandbox will (inside the root, never out of it).
func findPythonIn(rootfs string) (string, error) {
	for _, p := range pythonPaths {
		host, err := securejoin.SecureJoin(rootfs, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(host); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("the root filesystem has no python3 in /usr/local/bin, /usr/bin or /bin: install python3 in it")
}

// agentArgs starts the agent of a sandbox of view, with the template's
// preload code if any: the native supervisor where the image has it, else
// the Python one.
func agentArgs(view *Image, preload string) []string {
	if view.supervisor {
		return agent.SupervisorArgs(view.python, preload)
	}
	// -S: the agent's worker sets up site-packages after its fork, off
	// the start's clock (see agent.py).
	args := []string{view.python, "-S", "-c", agent.Bootstrap}
	if preload != "" {
		args = append(args, preload)
	}
	return args
}

// writeAgent puts the agent's modules into an image's /etc (see
// agent.Files and agent.Bootstrap), compiled by python if given: a host
// interpreter that is the sandbox's own. Compiling is only a saving; if it
// fails, sandboxes compile the sources themselves. With supervisor (the
// host's native supervisor) it installs that beside them and returns true;
// without, it removes one an earlier daemon installed.
func writeAgent(etc, python, supervisor string) (bool, error) {
	dir := filepath.Join(etc, strings.TrimPrefix(agent.Dir, "/etc/"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	args := []string{"-c", "import py_compile, sys\nfor f in sys.argv[1:]: py_compile.compile(f, doraise=True)"}
	for _, f := range agent.Files() {
		src := filepath.Join(dir, f.Name)
		if err := writeFileAtomic(src, f.Data, 0o644); err != nil {
			return false, fmt.Errorf("write the agent: %w", err)
		}
		if strings.HasSuffix(f.Name, ".py") {
			args = append(args, src) // not the JavaScript worker's
		}
	}
	if python != "" {
		_ = exec.Command(python, args...).Run()
	}
	installed := filepath.Join(dir, agent.SupervisorBinary)
	if supervisor == "" {
		if err := os.Remove(installed); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		return false, nil
	}
	// A new file, renamed over the old: running sandboxes keep theirs.
	b, err := os.ReadFile(supervisor)
	if err != nil {
		return false, fmt.Errorf("the native supervisor: %w", err)
	}
	if err := writeFileAtomic(installed, b, 0o755); err != nil {
		return false, fmt.Errorf("install the native supervisor: %w", err)
	}
	return true, nil
}

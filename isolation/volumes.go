package isolation

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/isolation/idmount"
)

// VolumeMount is a host folder (a volume's files) a sandbox sees at Path.
// Its files are owned, on disk, by the ids the sandbox sees inside (its
// user: InnerUID), and with user namespaces each sandbox's mount shows
// them as its own block's (package idmount): sandboxes of different
// blocks share the folder, each as its own user.
type VolumeMount struct {
	Source   string
	Path     string
	ReadOnly bool
}

// reservedTop are the folders of a sandbox's root a volume may not be
// mounted in or over: the system's, and what the runtime mounts itself.
var reservedTop = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "lib": true, "lib32": true, "lib64": true, "libx32": true,
	"proc": true, "run": true, "sbin": true, "sys": true, "tmp": true, "usr": true, "var": true, "workspace": true,
}

// CheckVolumePath says why a volume cannot be mounted at p in a sandbox
// whose user is u: p must be absolute and clean, and outside the system's
// folders, /workspace, /tmp and the user's home (the workspace again).
func CheckVolumePath(p string, u User) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q is not an absolute, clean path below /", p)
	}
	top, _, _ := strings.Cut(p[1:], "/")
	if reservedTop[top] {
		return fmt.Errorf("%q is in /%s, which the sandbox's system or the runtime has", p, top)
	}
	if h := u.homeMount(); h != "" && (p == h || strings.HasPrefix(p, h+"/") || strings.HasPrefix(h, p+"/")) {
		return fmt.Errorf("%q is the user's home (the workspace) or holds it", p)
	}
	return nil
}

// volumeSource is where the host shows volume i of a sandbox to it while
// it starts (paths.volumes).
func volumeSource(p *paths, i int) string { return filepath.Join(p.volumes, strconv.Itoa(i)) }

// mountVolumes makes each volume of s ready to be bound in: with user
// namespaces an idmapped mount of it for s's id block, else the volume's
// folder itself (every sandbox runs as the same host user then).
func (r *Runtime) mountVolumes(s *Spec, p *paths) error {
	if !r.userns {
		return nil
	}
	for i, v := range s.Volumes {
		// 0711, as the sandbox's folder: runsc's gofer, in the sandbox's
		// user namespace, reaches the mount through them.
		dst := volumeSource(p, i)
		if err := os.MkdirAll(dst, 0o711); err != nil {
			return err
		}
		for _, d := range []string{filepath.Dir(filepath.Dir(dst)), filepath.Dir(dst)} {
			if err := os.Chmod(d, 0o711); err != nil {
				return err
			}
		}
		if err := idmount.Mount(v.Source, dst, s.IDBase, idmap.BlockSize, v.ReadOnly); err != nil {
			return fmt.Errorf("volume at %s: %w", v.Path, err)
		}
	}
	return nil
}

// unmountVolumes lets go of a sandbox's volume mounts on the host (its
// container keeps its own) and their folders, which are removed only
// once empty: a volume's files are never removed with them.
func unmountVolumes(p *paths) error {
	dir := p.volumes
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		mp := filepath.Join(dir, e.Name())
		if err := unmountAll(mp); err != nil {
			errs = append(errs, err)
			continue // never removed while mounted
		}
		if err := os.Remove(mp); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// volumeMounts are s's volumes in its OCI spec, p its folders.
func (r *Runtime) volumeMounts(s *Spec, p *paths) []specs.Mount {
	var ms []specs.Mount
	for i, v := range s.Volumes {
		src := v.Source
		if r.userns {
			src = volumeSource(p, i)
		}
		opts := bindRW
		if v.ReadOnly {
			opts = bindRO
		}
		ms = append(ms, specs.Mount{Destination: v.Path, Type: "bind", Source: src, Options: opts})
	}
	return ms
}

package daemon

import (
	"path/filepath"

	"github.com/sandboxd/sandboxd/isolation/volume"
)

// layout is where the daemon keeps things in its data dir.
type layout struct{ dataDir string }

// session is the folder of everything a session keeps on disk (see
// package volume for what is in it).
func (l layout) session(id string) string { return filepath.Join(l.dataDir, "sessions", id) }

// volume is the folder of volume vid (a disk.VolumePrefix id), as package
// disk makes it; volumeData the host folder of its files.
func (l layout) volume(vid string) string { return filepath.Join(l.dataDir, "volumes", vid) }

func (l layout) volumeData(vid string) string { return volume.Workspace(l.volume(vid)) }

// snapshots holds the snapshots' folders; snapshot is snapshot sid's
// (see snapshots.go).
func (l layout) snapshots() string { return filepath.Join(l.dataDir, "snapshots") }

func (l layout) snapshot(sid string) string { return filepath.Join(l.snapshots(), sid) }

// hibernated holds the memory images of hibernated sessions; hibernation
// is session id's (see hibernate.go).
func (l layout) hibernated() string { return filepath.Join(l.dataDir, "hibernated") }

func (l layout) hibernation(id string) string { return filepath.Join(l.hibernated(), id) }

// workspace is the host folder of a session's /workspace.
func (l layout) workspace(id string) string { return volume.Workspace(l.session(id)) }

// imports holds root filesystems unpacked from tarballs, one folder per
// template name: <data-dir>/templates/<name>/rootfs (package pool).
func (l layout) imports() string { return filepath.Join(l.dataDir, "templates") }

// packages holds templates' packages (see isolation.WritePackages), one
// folder per template: <data-dir>/packages/<folder> (see templateFolder:
// root's by name, another owner's as <uid>@<name>).
func (l layout) packages() string { return filepath.Join(l.dataDir, "packages") }

func (l layout) templatePackages(name string) string { return filepath.Join(l.packages(), name) }

package sandboxfs

// Checkpoints are the states of /workspace that undo returns to (issue 33).
//
// On disk, in the checkpoints folder (on the session's disk, beside the
// workspace, so its bytes count in the session's quota; never shown to
// the sandbox):
//
//	manifests/<id>   one JSON manifest per checkpoint (manifest below):
//	                 every folder, file and symlink of the workspace, by
//	                 path, with a file's stat identity and its blob
//	blobs/<n>        one file's bytes, shared by every manifest whose
//	                 entry has the same (ino, ctime, size) there
//	.<anything>      a temp file, removed when the folder is opened
//
// A file is copied only when it is new or its (ino, ctime_ns, size)
// differs from the newest checkpoint's: ctime is set by the kernel on
// every change of content or inode, and no call lets sandboxed code set
// it back, so a change cannot pass for old. A manifest is written to a
// temp name and renamed into place after its blobs: after a daemon's
// crash a manifest is whole or absent, and blobs no manifest names are
// removed on open. Nothing is synced (see save).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// manifestVersion is the manifest format written; another is refused.
const manifestVersion = 1

// racyWindow: a file whose ctime is this close to the time it was read
// may have changed again within the same clock tick (ctime is coarse on
// kernels without multigrain timestamps) without its ctime moving, so
// the next Take compares its bytes with its blob instead of trusting it.
const racyWindow = 50 * time.Millisecond

// manifest is one checkpoint, as stored in manifests/<id>.
type manifest struct {
	Version int    `json:"version"`
	ID      uint64 `json:"id"`
	// Skipped counts what was left out: fifos, sockets, devices.
	Skipped int `json:"skipped,omitempty"`
	// Entries are in walk order: a folder before what it holds.
	Entries []entry `json:"entries"`
}

// entry is one folder, file or symlink of a manifest.
type entry struct {
	Path   string `json:"path"` // relative to the workspace, "/"-separated
	Type   string `json:"type"` // dir, file or symlink
	Mode   uint32 `json:"mode"` // permission bits (07777)
	Size   int64  `json:"size,omitempty"`
	Mtime  int64  `json:"mtime_ns,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Ctime  int64  `json:"ctime_ns,omitempty"`
	Target string `json:"target,omitempty"` // a symlink's
	// Blob holds a file's bytes; 0 for an empty file.
	Blob uint64 `json:"blob,omitempty"`
	// Racy: the file's ctime was within racyWindow of its reading, so
	// (ino, ctime, size) alone does not prove it unchanged.
	Racy bool `json:"racy,omitempty"`
}

const (
	typeDir     = "dir"
	typeFile    = "file"
	typeSymlink = "symlink"
)

// Checkpoints keeps the states of one workspace (FS.Workspace) that undo
// returns to, in dir: a folder on the session's own disk beside the
// workspace (so its bytes count in the session's disk quota), never
// shown to the sandbox.
type Checkpoints struct {
	fs  *FS
	dir string

	// op lets one Take, Restore or Keep run at a time.
	op sync.Mutex
	// base is what the next Take compares with: the newest checkpoint's
	// entries, or what Restore made. Guarded by op.
	base map[string]*entry
	// next is the next blob's number. Guarded by op.
	next uint64

	// mu guards what IDs reads, so it does not wait for a long Take.
	mu sync.Mutex
	// ids are the kept checkpoints, oldest first.
	ids []uint64
	// refs are the blobs each kept checkpoint names.
	refs    map[uint64][]uint64
	skipped map[uint64]int
}

// OpenCheckpoints loads what dir holds (after a daemon restart), making
// dir if missing. Temp files and blobs no checkpoint names (a Take cut by
// a crash) are removed; a manifest that does not parse is removed too,
// as a checkpoint that cannot be returned to.
func OpenCheckpoints(fs *FS, dir string) (*Checkpoints, error) {
	c := &Checkpoints{fs: fs, dir: dir, next: 1, refs: map[uint64][]uint64{}, skipped: map[uint64]int{}}
	for _, d := range []string{dir, c.manifestDir(), c.blobDir()} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("checkpoints: %w", err)
		}
	}
	names, err := readNames(c.manifestDir())
	if err != nil {
		return nil, err
	}
	var newest *manifest
	for _, n := range names {
		id, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			_ = os.Remove(filepath.Join(c.manifestDir(), n))
			continue
		}
		m, err := c.load(id)
		if err != nil {
			_ = os.Remove(filepath.Join(c.manifestDir(), n))
			continue
		}
		c.add(m)
		if newest == nil || m.ID > newest.ID {
			newest = m
		}
	}
	if newest != nil {
		c.base = index(newest)
	}
	blobs, err := readNames(c.blobDir())
	if err != nil {
		return nil, err
	}
	for _, n := range blobs {
		if b, err := strconv.ParseUint(n, 10, 64); err == nil && b >= c.next {
			c.next = b + 1
		}
	}
	if err := c.collect(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Checkpoints) manifestDir() string { return filepath.Join(c.dir, "manifests") }
func (c *Checkpoints) blobDir() string     { return filepath.Join(c.dir, "blobs") }
func (c *Checkpoints) blobPath(b uint64) string {
	return filepath.Join(c.blobDir(), strconv.FormatUint(b, 10))
}

// IDs is the kept checkpoints, oldest first.
func (c *Checkpoints) IDs() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// Skipped says how many fifos, sockets and devices checkpoint id left
// out (a restore removes them).
func (c *Checkpoints) Skipped(id uint64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.refs[id]; !ok {
		return 0, notFound(id)
	}
	return c.skipped[id], nil
}

func notFound(id uint64) error {
	return api.Errorf(errdefs.ErrNotFound, "no checkpoint %d: it was never taken, or was dropped by an undo or for the checkpoints limit", id)
}

// diskFull is the error for a checkpoint the session's disk has no room for.
func diskFull(err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return api.Errorf(errdefs.ErrResourceExhausted, "no space left for a checkpoint of /workspace: the session's disk is full (checkpoints count in its disk_mb)")
	}
	return err
}

// restoreFull is the error for a restore the session's disk has no room for.
func restoreFull(err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return api.Errorf(errdefs.ErrResourceExhausted, "no space left to restore /workspace: the session's disk is full (checkpoints count in its disk_mb)")
	}
	return err
}

// add records m as kept.
func (c *Checkpoints) add(m *manifest) {
	var blobs []uint64
	for i := range m.Entries {
		if b := m.Entries[i].Blob; b != 0 {
			blobs = append(blobs, b)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := slices.BinarySearch(c.ids, m.ID)
	c.ids = slices.Insert(c.ids, i, m.ID)
	c.refs[m.ID] = blobs
	c.skipped[m.ID] = m.Skipped
}

// drop forgets the checkpoints for which gone says so and removes their
// manifests. Blobs are freed by collect.
func (c *Checkpoints) drop(gone func(id uint64) bool) error {
	c.mu.Lock()
	var ids []uint64
	kept := c.ids[:0]
	for _, id := range c.ids {
		if gone(id) {
			ids = append(ids, id)
			delete(c.refs, id)
			delete(c.skipped, id)
		} else {
			kept = append(kept, id)
		}
	}
	c.ids = kept
	c.mu.Unlock()
	for _, id := range ids {
		if err := os.Remove(filepath.Join(c.manifestDir(), strconv.FormatUint(id, 10))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// collect removes the blobs (and temp files) that neither a kept
// checkpoint nor the baseline names.
func (c *Checkpoints) collect() error {
	used := map[uint64]bool{}
	c.mu.Lock()
	for _, bs := range c.refs {
		for _, b := range bs {
			used[b] = true
		}
	}
	c.mu.Unlock()
	for _, e := range c.base {
		used[e.Blob] = true
	}
	for _, d := range []string{c.blobDir(), c.manifestDir()} {
		names, err := readNames(d)
		if err != nil {
			return err
		}
		for _, n := range names {
			b, err := strconv.ParseUint(n, 10, 64)
			switch {
			case strings.HasPrefix(n, "."):
			case d == c.blobDir() && (err != nil || !used[b]):
			default:
				continue
			}
			if err := os.Remove(filepath.Join(d, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Keep keeps the newest n checkpoints, freeing the copies no kept one
// needs.
func (c *Checkpoints) Keep(n int) error {
	if n < 0 {
		return api.Errorf(errdefs.ErrInvalidArgument, "cannot keep %d checkpoints", n)
	}
	c.op.Lock()
	defer c.op.Unlock()
	if n == 0 {
		c.base = nil // no copy kept for a next Take either
	} else if ids := c.IDs(); len(ids) <= n {
		return nil
	}
	ids := c.IDs()
	if len(ids) > n {
		oldest := ids[len(ids)-n-1]
		if err := c.drop(func(id uint64) bool { return id <= oldest }); err != nil {
			return err
		}
	}
	return c.collect()
}

// load reads manifests/<id>, checking its paths: a restore goes by them.
func (c *Checkpoints) load(id uint64) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(c.manifestDir(), strconv.FormatUint(id, 10)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	m := &manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	if m.Version != manifestVersion || m.ID != id {
		return nil, fmt.Errorf("checkpoint %d: version %d, id %d: not this daemon's", id, m.Version, m.ID)
	}
	for _, e := range m.Entries {
		if !validPath(e.Path) {
			return nil, fmt.Errorf("checkpoint %d: bad path %q", id, e.Path)
		}
	}
	return m, nil
}

// validPath reports whether p is a relative path of plain names.
func validPath(p string) bool {
	if p == "" {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.IndexByte(c, 0) >= 0 {
			return false
		}
	}
	return true
}

// save writes m as manifests/<id>: to a temp name, renamed. Nothing is
// synced: checkpoints are only as good as the parked interpreter copies
// beside them, which a host crash ends (the session's next sandbox drops
// its history), while a daemon crash loses nothing the page cache holds.
// A sync each would cost an execution a journal commit or more.
func (c *Checkpoints) save(m *manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	name := strconv.FormatUint(m.ID, 10)
	tmp := filepath.Join(c.manifestDir(), "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return diskFull(err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(c.manifestDir(), name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return diskFull(err)
	}
	return nil
}

// index maps m's entries by path.
func index(m *manifest) map[string]*entry {
	out := make(map[string]*entry, len(m.Entries))
	for i := range m.Entries {
		out[m.Entries[i].Path] = &m.Entries[i]
	}
	return out
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// sortedNames lists the folder fd (opened for reading), sorted, so a
// manifest's order does not depend on the directory's hash order.
func sortedNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// sameContent reports whether the file f holds what blob b holds.
func (c *Checkpoints) sameContent(f *os.File, b uint64) (bool, error) {
	blob, err := os.Open(c.blobPath(b))
	if err != nil {
		return false, err
	}
	defer blob.Close()
	const n = 64 << 10
	x, y := make([]byte, n), make([]byte, n)
	for {
		i, err1 := io.ReadFull(f, x)
		j, err2 := io.ReadFull(blob, y)
		if i != j || string(x[:i]) != string(y[:j]) {
			return false, nil
		}
		end1 := err1 == io.EOF || err1 == io.ErrUnexpectedEOF
		end2 := err2 == io.EOF || err2 == io.ErrUnexpectedEOF
		if err1 != nil && !end1 {
			return false, err1
		}
		if err2 != nil && !end2 {
			return false, err2
		}
		if end1 || end2 {
			return end1 && end2, nil
		}
	}
}

// statNs are st's times in nanoseconds.
func mtimeNs(st *unix.Stat_t) int64 { return st.Mtim.Sec*1e9 + st.Mtim.Nsec }
func ctimeNs(st *unix.Stat_t) int64 { return st.Ctim.Sec*1e9 + st.Ctim.Nsec }

// subPath is name's path in the workspace, in the folder rel.
func subPath(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/durable"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/store"
)

// A snapshot is a session's state kept beyond it: its record as it was
// (the settings a session made from it takes) in the store, and its
// files in a folder of the data dir, <data-dir>/snapshots/<id>/:
//
//	workspace.tar  /workspace, as the files API's tar download makes it
//
// The folder is written under <id>.new and renamed whole, then the record
// is put: a snapshot is in the store only once its folder is complete,
// and reconcile removes a folder no record names (a daemon killed while
// it wrote one). A session made from a snapshot unpacks the tar into its
// new disk, as its own user's, before its sandbox starts; its first
// execution says state_reset (the interpreter starts afresh: its memory
// is not in the snapshot).

// Snapshots serves the API's snapshots and forks.
type Snapshots struct{ d *Daemon }

// opSnapshot is the operation a snapshot holds on its session: no stop,
// start or delete while its files are read.
const opSnapshot = "taking a snapshot"

// maxSnapshotsPerUID bounds the snapshots one user keeps: each holds
// real bytes of the data dir.
const maxSnapshotsPerUID = 64

// A snapshot folder's files: /workspace's tar, and in a memory snapshot
// /tmp's and the runtime's image of the memory (a folder).
const (
	snapshotTar    = "workspace.tar"
	snapshotTmpTar = "tmp.tar"
	snapshotMemory = "memory"
)

// CreateSnapshot keeps the session's files and settings as a snapshot of
// its owner's. A running session is frozen while its files are read.
func (sn Snapshots) CreateSnapshot(ctx context.Context, id string, req *api.CreateSnapshotRequest) (*api.Snapshot, error) {
	if err := callerFrom(ctx).requireKnown(); err != nil {
		return nil, err
	}
	if err := checkName(req.Name); err != nil {
		return nil, err
	}
	var snap *store.Snapshot
	_, err := sn.d.lifecycle(ctx, id, opSnapshot, func(s *session) error {
		rec := s.Snapshot()
		if err := sn.checkRoom(rec.OwnerUID, req.Name); err != nil {
			return err
		}
		var err error
		snap, err = sn.take(ctx, s, newID())
		if err != nil {
			return err
		}
		snap.Name = req.Name
		return sn.put(snap)
	})
	if err != nil {
		return nil, err
	}
	out := snapshotView(snap)
	return &out, nil
}

// checkRoom refuses a snapshot of owner's past their count, or under a
// name they gave another.
func (sn Snapshots) checkRoom(owner uint32, name string) error {
	all, err := sn.d.store.Snapshots()
	if err != nil {
		return err
	}
	n := 0
	for _, o := range all {
		if o.OwnerUID != owner || o.Fork {
			continue
		}
		if n++; n >= maxSnapshotsPerUID {
			return api.Errorf(errdefs.ErrResourceExhausted, "uid %d keeps %d snapshots, the most one user may: delete some first", owner, n)
		}
		if name != "" && o.Name == name {
			return api.Errorf(errdefs.ErrConflict, "you have a snapshot named %s", api.Quote(name))
		}
	}
	return nil
}

// take writes the session's state into a new snapshot folder, complete
// on return, and answers its record (not yet stored). The caller holds
// the session's operation. A running session of a runtime that saves
// memory (runsc) keeps its memory too: see takeMemory.
func (sn Snapshots) take(ctx context.Context, s *session, sid string) (_ *store.Snapshot, retErr error) {
	d := sn.d
	rec := s.Snapshot()
	sb := s.Sandbox()
	running := false
	if st, _ := s.Status(); sb != nil && st == sess.Running {
		running = true
	}
	memory := running && d.rt.CanCheckpoint(runtimeOf(rec.Runtime))
	used, _, _ := volume.Usage(d.cfg.DiskQuota, d.paths.session(rec.ID))
	if memory {
		// The image is about the memory the sandbox uses.
		if st, err := sb.Stats(); err == nil {
			used += int64(st.MemoryBytes)
		}
	}
	release, err := d.disk.Hold(ctx, "snapshot-"+sid, used)
	if err != nil {
		return nil, err
	}
	defer release()
	dir := d.paths.snapshot(sid)
	tmp := dir + ".new"
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	if memory {
		memory, err = sn.takeMemory(ctx, s, sb, tmp)
		if err != nil {
			return nil, err
		}
	}
	if !memory {
		if err := sn.takeFiles(s, sb, running, tmp); err != nil {
			return nil, err
		}
	}
	size, err := folderSize(tmp)
	if err != nil {
		return nil, err
	}
	if err := durable.RenameDir(tmp, dir); err != nil {
		return nil, err
	}
	// What a session made from it must not inherit.
	rec.Status, rec.Reason, rec.Idempotency = "", "", nil
	return &store.Snapshot{SnapshotID: sid, OwnerUID: rec.OwnerUID, CreatedAt: now(), SizeBytes: size, Memory: memory, Session: rec}, nil
}

// takeFiles writes the session's /workspace into folder dir, with every
// process of a running session stopped (frozen): no half-written file is
// kept.
func (sn Snapshots) takeFiles(s *session, sb Sandbox, running bool, dir string) error {
	d := sn.d
	if running {
		id := s.ID()
		t0 := time.Now()
		if err := sb.Freeze(); err != nil {
			_ = sb.Thaw()
			return fmt.Errorf("freeze session %s: %w", id, err)
		}
		defer func() {
			if err := sb.Thaw(); err != nil {
				d.log.Warn("thaw after a snapshot", "session", id, "err", err)
			}
			d.log.Debug("session frozen for a snapshot", "session", id, "took", time.Since(t0))
		}()
	}
	return sn.writeTar(s, sandboxfs.Workspace, filepath.Join(dir, snapshotTar))
}

// takeMemory saves the running session's memory into folder dir (its
// image in snapshotMemory), and its /workspace and /tmp as the image
// knows them: read while the sandbox is still paused after the image is
// written (a session restored from it must find every file its memory
// had looked up). It answers false, having kept nothing, where the
// sandbox cannot save its memory after all (an agent of an older
// daemon's): the caller keeps its files alone.
func (sn Snapshots) takeMemory(ctx context.Context, s *session, sb Sandbox, dir string) (bool, error) {
	t0 := time.Now()
	err := sb.Checkpoint(ctx, filepath.Join(dir, snapshotMemory), func() error {
		if err := sn.writeTar(s, sandboxfs.Workspace, filepath.Join(dir, snapshotTar)); err != nil {
			return err
		}
		return sn.writeTar(s, sandboxfs.Tmp, filepath.Join(dir, snapshotTmpTar))
	})
	var refused *isolation.CheckpointRefusedError
	switch {
	case err == nil:
		sn.d.log.Debug("session's memory saved for a snapshot", "session", s.ID(), "took", time.Since(t0))
		return true, nil
	case errors.Is(err, isolation.ErrCheckpointUnsupported):
		return false, os.RemoveAll(filepath.Join(dir, snapshotMemory))
	case errors.As(err, &refused):
		return false, api.Errorf(errdefs.ErrFailedPrecondition, "session %s's memory cannot be saved now: %s", s.ID(), refused.Reason)
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		return false, err
	}
	return false, fmt.Errorf("save session %s's memory: %w", s.ID(), err)
}

// writeTar writes the session's folder root (/workspace, /tmp) as the
// files API's tar into the new file path.
func (sn Snapshots) writeTar(s *session, root sandboxfs.Root, path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := sn.d.sessionFS(s).ReadTarContents(root, f); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return err
		}
		return fmt.Errorf("read session %s's files: %w", s.ID(), err)
	}
	return f.Sync()
}

// folderSize is the bytes of the regular files in folder dir.
func folderSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// put records snapshot snap, its folder written: from then on it is
// whole. A snapshot that cannot be recorded keeps no folder either.
func (sn Snapshots) put(snap *store.Snapshot) error {
	if err := sn.d.store.PutSnapshot(snap); err != nil {
		sn.remove(snap.SnapshotID)
		return recordErr(snap.SnapshotID, err)
	}
	return nil
}

// ListSnapshots lists the caller's snapshots (root: all).
func (sn Snapshots) ListSnapshots(ctx context.Context) ([]api.Snapshot, error) {
	c := callerFrom(ctx)
	all, err := sn.d.store.Snapshots()
	if err != nil {
		return nil, err
	}
	out := []api.Snapshot{}
	for _, s := range all {
		if c.mayUse(s.OwnerUID) && !s.Fork {
			out = append(out, snapshotView(s))
		}
	}
	slices.SortFunc(out, func(a, b api.Snapshot) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// GetSnapshot is one of the caller's snapshots, by id or name.
func (sn Snapshots) GetSnapshot(ctx context.Context, ref string) (*api.Snapshot, error) {
	s, err := sn.lookup(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := snapshotView(s)
	return &out, nil
}

// DeleteSnapshot removes a snapshot and its files. Sessions made from it
// keep theirs.
func (sn Snapshots) DeleteSnapshot(ctx context.Context, ref string) error {
	s, err := sn.lookup(ctx, ref)
	if err != nil {
		return err
	}
	if err := sn.d.store.DeleteSnapshot(s.SnapshotID); err != nil {
		return recordErr(s.SnapshotID, err)
	}
	sn.remove(s.SnapshotID)
	return nil
}

// lookup is the caller's snapshot ref: its id, or a name of theirs (root:
// any id, and its own names).
func (sn Snapshots) lookup(ctx context.Context, ref string) (*store.Snapshot, error) {
	c := callerFrom(ctx)
	missing := api.Errorf(errdefs.ErrNotFound, "no such snapshot: %s", api.Quote(ref))
	if ref == "" || strings.ContainsAny(ref, "/\x00") {
		return nil, missing
	}
	if s, err := sn.d.store.GetSnapshot(ref); err == nil {
		if !c.mayUse(s.OwnerUID) {
			return nil, missing
		}
		return s, nil
	} else if !errdefs.IsNotFound(err) {
		return nil, err
	}
	all, err := sn.d.store.Snapshots()
	if err != nil {
		return nil, err
	}
	for _, s := range all {
		if s.Name == ref && s.OwnerUID == c.UID {
			return s, nil
		}
	}
	return nil, missing
}

// remove lets go of snapshot sid's folder.
func (sn Snapshots) remove(sid string) {
	if err := os.RemoveAll(sn.d.paths.snapshot(sid)); err != nil {
		sn.d.log.Warn("remove snapshot folder", "snapshot", sid, "err", err)
	}
}

// reconcile removes the snapshot folders no record names (one being
// written when a daemon was killed), and the records whose folder is
// gone.
func (sn Snapshots) reconcile(ctx context.Context) error {
	all, err := sn.d.store.Snapshots()
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, s := range all {
		if s.Fork {
			// A fork's, left by a daemon killed during the fork.
			if err := sn.d.store.DeleteSnapshot(s.SnapshotID); err != nil {
				return err
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(sn.d.paths.snapshot(s.SnapshotID), snapshotTar)); err != nil {
			sn.d.log.Warn("snapshot's files are gone: forgetting it", "snapshot", s.SnapshotID, "err", err)
			if err := sn.d.store.DeleteSnapshot(s.SnapshotID); err != nil {
				return err
			}
			continue
		}
		known[s.SnapshotID] = true
	}
	return removeOthers(sn.d.paths.snapshots(), known, func(name string, err error) {
		sn.d.log.Warn("remove orphan snapshot folder", "snapshot", name, "err", err)
	})
}

// snapshotView is s as the API shows it.
func snapshotView(s *store.Snapshot) api.Snapshot {
	return api.Snapshot{
		ID: s.SnapshotID, SessionID: s.Session.ID, Name: s.Name, OwnerUID: s.OwnerUID,
		Template: s.Session.Template, Runtime: runtimeOf(s.Session.Runtime), Memory: s.Memory,
		SizeMB: (s.SizeBytes + 1<<20 - 1) >> 20, CreatedAt: s.CreatedAt,
	}
}

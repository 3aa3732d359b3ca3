package daemon

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/store"
)

// A volume is a filesystem of its own size (an image as a session's disk
// is, promised and made by package disk) that outlives sessions: the
// caller's sessions name it at create and mount it, several at once, each
// seeing its files as its own user's (isolation.VolumeMount). Its record
// is the store's; the sessions that mount it are those whose records name
// it, running or not, so it is not deleted while one may start again with
// it.

// Volumes serves the API's volumes.
type Volumes struct{ d *Daemon }

// volumeUse counts, by volume id, the creates under way that will mount
// a volume: a delete meanwhile would take it from under them.
type volumeUse struct {
	mu      sync.Mutex
	pending map[string]int
}

// CreateVolume makes a volume of the caller's.
func (v Volumes) CreateVolume(ctx context.Context, req *api.CreateVolumeRequest) (*api.Volume, error) {
	c := callerFrom(ctx)
	if err := c.requireKnown(); err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "a volume needs a name")
	}
	if err := checkName(req.Name); err != nil {
		return nil, err
	}
	if minMB := int64(volume.MinBytes >> 20); req.SizeMB < minMB || req.SizeMB > v.d.cfg.Max.DiskMB {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "size_mb %d: a volume is %d to %d MB (the daemon's max disk_mb)", req.SizeMB, minMB, v.d.cfg.Max.DiskMB)
	}
	shared, err := sharedWith(req.SharedWith, c.UID)
	if err != nil {
		return nil, err
	}
	rec := &store.Volume{VolumeID: disk.VolumePrefix + newID(), Name: req.Name, SizeMB: req.SizeMB, OwnerUID: c.UID, CreatedAt: now(), SharedWith: shared}
	taken := api.Errorf(errdefs.ErrConflict, "you have a volume named %s", api.Quote(req.Name))
	if _, err := v.find(c.UID, req.Name); err == nil {
		return nil, taken
	}
	if err := v.d.disk.Ensure(ctx, rec.VolumeID, rec.SizeMB, disk.Session(rec.OwnerUID), v.d.tmpl.YieldDisk); err != nil {
		return nil, err
	}
	fail := func(err error) (*api.Volume, error) {
		v.remove(rec.VolumeID)
		return nil, err
	}
	// Its files are the sandbox user's as sandboxes see themselves
	// (isolation.VolumeMount): its root first.
	uid, gid := v.d.rt.HostOwner(0)
	if err := os.Chown(v.d.paths.volumeData(rec.VolumeID), uid, gid); err != nil {
		return fail(err)
	}
	if err := v.d.store.CreateVolume(rec); err != nil {
		if errdefs.IsAlreadyExists(err) {
			return fail(taken)
		}
		return fail(recordErr(rec.VolumeID, err))
	}
	out := v.api(rec)
	return &out, nil
}

// ListVolumes lists the volumes the caller may see: its own (root: all).
func (v Volumes) ListVolumes(ctx context.Context) ([]api.Volume, error) {
	c := callerFrom(ctx)
	all, err := v.d.store.Volumes()
	if err != nil {
		return nil, err
	}
	out := []api.Volume{}
	for _, rec := range all {
		if c.mayMountVolume(rec.OwnerUID, rec.SharedWith) {
			out = append(out, v.api(rec))
		}
	}
	return out, nil
}

// GetVolume is one of the caller's volumes, or "uid/name" another user's
// that root or one it is shared with sees.
func (v Volumes) GetVolume(ctx context.Context, name string) (*api.Volume, error) {
	rec, err := v.visible(ctx, name)
	if err != nil {
		return nil, err
	}
	out := v.api(rec)
	return &out, nil
}

// DeleteVolume removes a volume and its files; 409 while a session mounts
// it.
func (v Volumes) DeleteVolume(ctx context.Context, name string) error {
	rec, err := v.lookup(ctx, name)
	if err != nil {
		return err
	}
	use := &v.d.volumes
	use.mu.Lock()
	defer use.mu.Unlock()
	if by := v.mountedBy(rec.VolumeID); len(by) > 0 || use.pending[rec.VolumeID] > 0 {
		return api.Errorf(errdefs.ErrConflict, "volume %s is mounted by sessions %v: delete them first", api.Quote(rec.Name), by)
	}
	if err := v.d.store.DeleteVolume(rec.OwnerUID, rec.Name); err != nil {
		return recordErr(rec.VolumeID, err)
	}
	v.remove(rec.VolumeID)
	return nil
}

// UpdateVolume changes what the owner may change of a volume: the users
// it is shared with. A user it stops being shared with must have no
// session that mounts it (409): their sessions would keep a volume they
// may no longer see.
func (v Volumes) UpdateVolume(ctx context.Context, name string, req *api.UpdateVolumeRequest) (*api.Volume, error) {
	rec, err := v.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	if req.SharedWith == nil {
		out := v.api(rec)
		return &out, nil
	}
	shared, err := sharedWith(*req.SharedWith, rec.OwnerUID)
	if err != nil {
		return nil, err
	}
	use := &v.d.volumes
	use.mu.Lock()
	defer use.mu.Unlock()
	updated, err := v.d.store.UpdateVolume(rec.OwnerUID, rec.Name, func(cur *store.Volume) error {
		var gone []uint32
		for _, u := range cur.SharedWith {
			if !slices.Contains(shared, u) {
				gone = append(gone, u)
			}
		}
		if len(gone) == 0 {
			cur.SharedWith = shared
			return nil
		}
		if use.pending[cur.VolumeID] > 0 {
			return api.Errorf(errdefs.ErrConflict, "volume %s is being mounted by a session being created: try again", api.Quote(cur.Name))
		}
		for _, s := range v.d.sessions.all() {
			r := s.Snapshot()
			if slices.Contains(gone, r.OwnerUID) && slices.ContainsFunc(r.Volumes, func(m store.VolumeMount) bool { return m.VolumeID == cur.VolumeID }) {
				return api.Errorf(errdefs.ErrConflict, "session %s of uid %d mounts volume %s: delete it before the volume stops being shared with that user", r.ID, r.OwnerUID, api.Quote(cur.Name))
			}
		}
		cur.SharedWith = shared
		return nil
	})
	if err != nil {
		if errdefs.IsNotFound(err) { // deleted meanwhile
			return nil, api.Errorf(errdefs.ErrNotFound, "no such volume: %s", api.Quote(name))
		}
		return nil, err
	}
	out := v.api(updated)
	return &out, nil
}

// sharedWith checks and orders the users a volume of owner is shared
// with (the owner is no one it is shared with).
func sharedWith(uids []uint32, owner uint32) ([]uint32, error) {
	if len(uids) > maxSharedWith {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "shared_with names %d users: a volume is shared with at most %d", len(uids), maxSharedWith)
	}
	shared := slices.Compact(slices.Sorted(slices.Values(uids)))
	return slices.DeleteFunc(shared, func(u uint32) bool { return u == owner }), nil
}

// remove lets go of volume vid's folder (unmounted first, so nothing
// beyond it goes) and its promise of disk.
func (v Volumes) remove(vid string) {
	if err := volume.Remove(v.d.paths.volume(vid)); err != nil {
		v.d.log.Warn("remove volume folder", "volume", vid, "err", err)
		return
	}
	v.d.disk.Forget(vid)
}

// lookup is the caller's volume name, or for root "uid/name"; to anyone
// else another's volume does not exist.
func (v Volumes) lookup(ctx context.Context, name string) (*store.Volume, error) {
	c := callerFrom(ctx)
	owner := c.UID
	if uid, rest, ok := cutOwner(name); ok && c.mayUse(uid) {
		owner, name = uid, rest
	}
	return v.find(owner, name)
}

// visible is lookup, and for "uid/name" also a volume shared with the
// caller: what it may see and mount.
func (v Volumes) visible(ctx context.Context, name string) (*store.Volume, error) {
	c := callerFrom(ctx)
	if uid, rest, ok := cutOwner(name); ok && !c.mayUse(uid) {
		rec, err := v.find(uid, rest)
		if err != nil || !c.mayMountVolume(rec.OwnerUID, rec.SharedWith) {
			return nil, api.Errorf(errdefs.ErrNotFound, "no such volume: %s", api.Quote(name))
		}
		return rec, nil
	}
	return v.lookup(ctx, name)
}

// find is owner's volume name.
func (v Volumes) find(owner uint32, name string) (*store.Volume, error) {
	all, err := v.d.store.Volumes()
	if err != nil {
		return nil, err
	}
	for _, rec := range all {
		if rec.OwnerUID == owner && rec.Name == name {
			return rec, nil
		}
	}
	return nil, api.Errorf(errdefs.ErrNotFound, "no such volume: %s", api.Quote(name))
}

// mountedBy are the sessions whose records name volume vid.
func (v Volumes) mountedBy(vid string) []string {
	by := []string{}
	for _, s := range v.d.sessions.all() {
		rec := s.Snapshot()
		if slices.ContainsFunc(rec.Volumes, func(m store.VolumeMount) bool { return m.VolumeID == vid }) {
			by = append(by, rec.ID)
		}
	}
	slices.Sort(by)
	return by
}

// api is rec as the API shows it.
func (v Volumes) api(rec *store.Volume) api.Volume {
	used, _, _ := volume.Usage(v.d.cfg.DiskQuota, v.d.paths.volume(rec.VolumeID))
	return api.Volume{Name: rec.Name, SizeMB: rec.SizeMB, UsedMB: used >> 20, OwnerUID: rec.OwnerUID, CreatedAt: rec.CreatedAt,
		MountedBy: v.mountedBy(rec.VolumeID), SharedWith: slices.Clone(rec.SharedWith)}
}

// mounts turns a create's volumes into the record's, holding each volume
// against deletes until done is called (the session's record holds them
// from then on, or the create failed).
func (v Volumes) mounts(ctx context.Context, req []api.VolumeMount, u isolation.User) (_ []store.VolumeMount, done func(), err error) {
	if len(req) == 0 {
		return nil, func() {}, nil
	}
	if len(req) > maxVolumeMounts {
		return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "%d volumes: a session mounts at most %d", len(req), maxVolumeMounts)
	}
	var out []store.VolumeMount
	for i, m := range req {
		if err := isolation.CheckVolumePath(m.Path, u); err != nil {
			return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "volume %s: %v", api.Quote(m.Name), err)
		}
		for _, o := range req[:i] {
			if o.Path == m.Path {
				return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "two volumes at %s", api.Quote(m.Path))
			}
		}
		rec, err := v.visible(ctx, m.Name)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, store.VolumeMount{Name: rec.Name, OwnerUID: rec.OwnerUID, VolumeID: rec.VolumeID, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	use := &v.d.volumes
	use.mu.Lock()
	defer use.mu.Unlock()
	if use.pending == nil {
		use.pending = map[string]int{}
	}
	for _, m := range out {
		// Deleted, or no longer shared with the caller, since it was
		// found: the delete or the update held the lock.
		rec, err := v.find(m.OwnerUID, m.Name)
		if err != nil {
			return nil, nil, err
		}
		if !callerFrom(ctx).mayMountVolume(rec.OwnerUID, rec.SharedWith) {
			return nil, nil, api.Errorf(errdefs.ErrNotFound, "no such volume: %s", api.Quote(m.Name))
		}
	}
	for _, m := range out {
		use.pending[m.VolumeID]++
	}
	return out, func() {
		use.mu.Lock()
		defer use.mu.Unlock()
		for _, m := range out {
			if use.pending[m.VolumeID]--; use.pending[m.VolumeID] <= 0 {
				delete(use.pending, m.VolumeID)
			}
		}
	}, nil
}

// maxVolumeMounts bounds the volumes of one session; maxSharedWith the
// users a volume is shared with.
const (
	maxVolumeMounts = 16
	maxSharedWith   = 64
)

// cutOwner splits "uid/name", root's way of naming another user's volume.
func cutOwner(s string) (uint32, string, bool) {
	u, name, ok := strings.Cut(s, "/")
	if !ok {
		return 0, "", false
	}
	uid, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, "", false
	}
	return uint32(uid), name, true
}

// volumeSpecs are a record's volumes as its sandbox mounts them.
func volumeSpecs(paths layout, ms []store.VolumeMount) []isolation.VolumeMount {
	var out []isolation.VolumeMount
	for _, m := range ms {
		out = append(out, isolation.VolumeMount{Source: paths.volumeData(m.VolumeID), Path: m.Path, ReadOnly: m.ReadOnly})
	}
	return out
}

// volumeDisks are the volumes' disks, for package disk's reconcile.
func volumeDisks(vols []*store.Volume) []disk.Disk {
	var out []disk.Disk
	for _, v := range vols {
		out = append(out, disk.Disk{ID: v.VolumeID, MB: v.SizeMB, Owner: v.OwnerUID})
	}
	return out
}

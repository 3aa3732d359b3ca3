package daemon

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/containerd/errdefs"
	"golang.org/x/sync/errgroup"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/disk"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/isolation/volume"
	"github.com/sandboxd/sandboxd/store"
)

// Sessions made from a snapshot: one, several at once, or a fork of a
// running session (a snapshot no one keeps, and sessions from it).

// fromSnapshot is the record of a session made from the snapshot req
// names, with what req may change of it (api.CreateSessionRequest.Snapshot):
// the snapshot's settings, a new identity.
func (sn Snapshots) fromSnapshot(ctx context.Context, req *api.CreateSessionRequest) (*store.Record, *pool.Template, *store.Snapshot, error) {
	if f := settingsBeside(req); f != "" {
		return nil, nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "%s: a session made from a snapshot takes the snapshot's (only name, labels, env, idle_action, deadline_s and volumes may be given)", f)
	}
	snap, err := sn.lookup(ctx, req.Snapshot)
	if err != nil {
		return nil, nil, nil, err
	}
	src := snap.Session
	t, err := sn.d.tmpl.ForStart(src.Template)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("snapshot %s: %w", snap.SnapshotID, err)
	}
	deadline, err := checkOwnSettings(sn.d.clock.Now(), req)
	if err != nil {
		return nil, nil, nil, err
	}
	labels := maps.Clone(src.Labels)
	if len(req.Labels) > 0 && labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, req.Labels)
	env := src.Env
	if len(req.Env) > 0 {
		env = envList(mergeEnv(src.Env, req.Env))
		slices.Sort(env)
	}
	at := now()
	return &store.Record{
		ID:         newID(),
		Name:       req.Name,
		OwnerUID:   callerFrom(ctx).UID,
		Template:   src.Template,
		CreatedAt:  at,
		LastUsedAt: at,
		Limits:     src.Limits,
		Network:    src.Network,
		Allow:      slices.Clone(src.Allow),
		EgressKbps: src.EgressKbps, MaxConnections: src.MaxConnections,
		Labels:      labels,
		Env:         slices.Clone(env),
		Runtime:     src.Runtime,
		MCPServers:  slices.Clone(src.MCPServers),
		IdleAction:  cmp.Or(req.IdleAction, src.IdleAction),
		Deadline:    deadline,
		Contexts:    slices.Clone(src.Contexts),
		Checkpoints: src.Checkpoints,
	}, t, snap, nil
}

// settingsBeside names a setting of req that a session made from a
// snapshot cannot take ("" none).
func settingsBeside(req *api.CreateSessionRequest) string {
	switch {
	case req.Template != "":
		return "template"
	case req.Runtime != "":
		return "runtime"
	case req.MemoryMB != nil || req.CPUs != nil || req.Pids != nil || req.DiskMB != nil || req.TimeoutS != nil || req.IdleTimeoutS != nil:
		return "limits"
	case req.Network != "" || len(req.Allow) > 0 || req.EgressKbps != nil || req.MaxConnections != nil:
		return "network"
	case len(req.MCPServers) > 0:
		return "mcp_servers"
	case req.Checkpoints != 0:
		return "checkpoints"
	}
	return ""
}

// seed fills the new session's disk with the snapshot's files, as its
// own user's, before its sandbox first starts; its first execution says
// the interpreter started afresh.
func (sn Snapshots) seed(ctx context.Context, s *session, snap *store.Snapshot) error {
	d := sn.d
	if err := d.launch.assignIDs(s); err != nil {
		return err
	}
	rec := s.Snapshot()
	if err := d.disk.Ensure(ctx, rec.ID, rec.Limits.DiskMB, disk.Session(rec.OwnerUID), d.tmpl.YieldDisk); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(d.paths.snapshot(snap.SnapshotID), snapshotTar))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", snap.SnapshotID, err)
	}
	defer f.Close()
	if _, err := d.sessionFS(s).WriteTar(sandboxfs.Workspace, "", f, max(rec.Limits.DiskMB<<20, snap.SizeBytes)); err != nil {
		return fmt.Errorf("unpack snapshot %s: %w", snap.SnapshotID, err)
	}
	if snap.Memory && sameMounts(rec.Volumes, snap.Session.Volumes) && d.rt.CanCheckpoint(runtimeOf(rec.Runtime)) {
		return sn.seedMemory(s, snap)
	}
	s.SetResetUntold()
	return nil
}

// seedMemory has the new session's first start restore the snapshot's
// memory, over its /tmp as the memory knows it.
func (sn Snapshots) seedMemory(s *session, snap *store.Snapshot) error {
	d := sn.d
	rec := s.Snapshot()
	snapDir := d.paths.snapshot(snap.SnapshotID)
	fs := d.sessionFS(s)
	fs.Tmp = volume.Tmp(d.paths.session(rec.ID))
	if err := os.MkdirAll(fs.Tmp, 0o700); err != nil {
		return err
	}
	if err := os.Chown(fs.Tmp, fs.UID, fs.GID); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(snapDir, snapshotTmpTar))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", snap.SnapshotID, err)
	}
	defer f.Close()
	if _, err := fs.WriteTar(sandboxfs.Tmp, "", f, max(rec.Limits.DiskMB<<20, snap.SizeBytes)); err != nil {
		return fmt.Errorf("unpack snapshot %s's /tmp: %w", snap.SnapshotID, err)
	}
	s.memory = filepath.Join(snapDir, snapshotMemory)
	return nil
}

// sameMounts says whether a session of volumes a sees its volumes where
// one of b did, and as writable: a memory image holds its mounts, and
// restores only over the same.
func sameMounts(a, b []store.VolumeMount) bool {
	key := func(ms []store.VolumeMount) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = fmt.Sprintf("%s %t", m.Path, m.ReadOnly)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// CreateSessions makes req.Count sessions from the snapshot req names
// (POST /v1/sessions with a count): all of them, or none.
func (sn Snapshots) CreateSessions(ctx context.Context, req *api.CreateSessionRequest) ([]api.Session, error) {
	if req.Snapshot == "" {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "count makes sessions from a snapshot: name one (snapshot)")
	}
	if err := checkCount(req.Count); err != nil {
		return nil, err
	}
	if req.Name != "" && req.Count > 1 {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "name %s: names are unique, and count makes %d sessions: give none", api.Quote(req.Name), req.Count)
	}
	one := *req
	one.Count = 0
	return sn.createMany(ctx, &one, req.Count)
}

// Fork makes req.Count sessions that start where session id is now: a
// snapshot of it that no one keeps, and sessions from it. The source
// is frozen only while its files are read, and keeps running.
func (sn Snapshots) Fork(ctx context.Context, id string, req *api.ForkRequest) ([]api.Session, error) {
	if err := callerFrom(ctx).requireKnown(); err != nil {
		return nil, err
	}
	count := cmp.Or(req.Count, 1)
	if err := checkCount(count); err != nil {
		return nil, err
	}
	var snap *store.Snapshot
	_, err := sn.d.lifecycle(ctx, id, opSnapshot, func(s *session) error {
		var err error
		if snap, err = sn.take(ctx, s, newID()); err != nil {
			return err
		}
		snap.Fork = true
		return sn.put(snap)
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := sn.d.store.DeleteSnapshot(snap.SnapshotID); err != nil {
			sn.d.log.Warn("forget a fork's snapshot", "snapshot", snap.SnapshotID, "err", err)
			return // the next start removes it
		}
		sn.remove(snap.SnapshotID)
	}()
	// The forks mount the source's volumes, as the caller names them.
	c := callerFrom(ctx)
	creq := &api.CreateSessionRequest{Snapshot: snap.SnapshotID}
	for _, m := range snap.Session.Volumes {
		name := m.Name
		if m.OwnerUID != c.UID {
			name = fmt.Sprintf("%d/%s", m.OwnerUID, m.Name)
		}
		creq.Volumes = append(creq.Volumes, api.VolumeMount{Name: name, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	return sn.createMany(ctx, creq, count)
}

// checkCount checks how many sessions one call makes.
func checkCount(n int) error {
	if n < 1 || n > api.MaxCount {
		return api.Errorf(errdefs.ErrInvalidArgument, "count %d: one call makes 1 to %d sessions", n, api.MaxCount)
	}
	return nil
}

// createParallel bounds the sessions of one createMany started at once.
const createParallel = 4

// createMany makes n sessions of req, a few at a time; if one fails, the
// others made are deleted and its error answers.
func (sn Snapshots) createMany(ctx context.Context, req *api.CreateSessionRequest, n int) ([]api.Session, error) {
	made := make([]*session, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(createParallel)
	for i := range n {
		g.Go(func() error {
			s, err := sn.d.createSession(gctx, req, nil)
			made[i] = s
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, s := range made {
			if s != nil {
				if derr := sn.d.DeleteSession(context.WithoutCancel(ctx), s.ID()); derr != nil {
					sn.d.log.Warn("delete a session of a create that failed", "session", s.ID(), "err", derr)
				}
			}
		}
		return nil, err
	}
	out := make([]api.Session, n)
	for i, s := range made {
		out[i] = s.snapshot()
	}
	return out, nil
}

package daemon

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/durable"
	"github.com/sandboxd/sandboxd/store"
)

// A snapshot travels between nodes as one tar stream: snapshot.json (an
// api.SnapshotManifest: the settings as a create's request, which the
// importing node checks as it would a create's, for its caller) and
// workspace.tar, the files as the snapshot keeps them. Nothing in it is
// trusted: the settings go through the create's checks, and the files
// are unpacked by the files API's tar writer when a session is made.

// maxManifestBytes bounds snapshot.json.
const maxManifestBytes = 1 << 20

// ExportSnapshot finds the caller's snapshot ref and answers what writes
// it as one tar stream (errors before the first byte are returned here).
func (sn Snapshots) ExportSnapshot(ctx context.Context, ref string) (func(io.Writer) error, error) {
	s, err := sn.lookup(ctx, ref)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(sn.d.paths.snapshot(s.SnapshotID), snapshotTar))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.SnapshotID, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	// Files and settings only, whatever it holds: a memory image is
	// tied to the runsc build and platform that made it, and gVisor
	// trusts what it restores, so no node loads one it did not make.
	m, err := json.MarshalIndent(api.SnapshotManifest{Format: api.SnapshotFormat, Name: s.Name, CreatedAt: s.CreatedAt,
		Session: createRequestOf(&s.Session)}, "", "  ")
	if err != nil {
		f.Close()
		return nil, err
	}
	return func(w io.Writer) error {
		defer f.Close()
		tw := tar.NewWriter(w)
		for _, e := range []struct {
			name string
			size int64
			r    io.Reader
		}{{api.SnapshotManifestName, int64(len(m)), bytes.NewReader(m)}, {api.SnapshotWorkspaceName, fi.Size(), f}} {
			if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o600, Size: e.size, ModTime: s.CreatedAt, Format: tar.FormatPAX}); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, e.r, e.size); err != nil {
				return err
			}
		}
		return tw.Close()
	}, nil
}

// createRequestOf is the create request that makes a session of rec's
// settings.
func createRequestOf(rec *store.Record) api.CreateSessionRequest {
	l := rec.Limits
	env := mergeEnv(rec.Env, nil) // the record's "K=V" list as a map
	return api.CreateSessionRequest{
		Template: rec.Template, Runtime: runtimeOf(rec.Runtime),
		MemoryMB: &l.MemoryMB, CPUs: &l.CPUs, Pids: &l.Pids, DiskMB: &l.DiskMB, TimeoutS: &l.TimeoutS, IdleTimeoutS: &l.IdleTimeoutS,
		Network: rec.Network, Allow: rec.Allow, EgressKbps: &rec.EgressKbps, MaxConnections: &rec.MaxConnections,
		Env: env, Labels: rec.Labels, MCPServers: rec.MCPServers, IdleAction: rec.IdleAction, Checkpoints: rec.Checkpoints,
	}
}

// ImportSnapshot makes a snapshot of the caller's from an exported one
// (name "": the one it was exported with). Its settings must pass a
// create's checks here, for the caller; a bad stream keeps nothing.
func (sn Snapshots) ImportSnapshot(ctx context.Context, name string, body io.Reader) (*api.Snapshot, error) {
	d := sn.d
	c := callerFrom(ctx)
	if err := c.requireKnown(); err != nil {
		return nil, err
	}
	m, tr, err := readManifest(body)
	if err != nil {
		return nil, err
	}
	name = cmp.Or(name, m.Name)
	if err := checkName(name); err != nil {
		return nil, err
	}
	rec, _, err := d.checkCreate(ctx, &m.Session)
	if err != nil {
		return nil, fmt.Errorf("the snapshot's settings: %w", err)
	}
	rec.ID = "" // made by no session here
	if err := sn.checkRoom(c.UID, name); err != nil {
		return nil, err
	}
	h, err := tr.Next()
	if err != nil || h.Name != api.SnapshotWorkspaceName || h.Typeflag != tar.TypeReg {
		return nil, notExported("its second entry is not %s", api.SnapshotWorkspaceName)
	}
	// A tar of a disk's files is its bytes and a header of each: twice
	// the disk is more than any takes.
	if h.Size > 2*rec.Limits.DiskMB<<20 {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "the snapshot's files take %d MiB, more than its disk_mb %d can hold", h.Size>>20, rec.Limits.DiskMB)
	}
	sid := newID()
	release, err := d.disk.Hold(ctx, "snapshot-"+sid, h.Size)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := sn.writeImport(sid, tr, h.Size); err != nil {
		return nil, err
	}
	snap := &store.Snapshot{SnapshotID: sid, Name: name, OwnerUID: c.UID, CreatedAt: cmp.Or(m.CreatedAt, now()), SizeBytes: h.Size, Session: *rec}
	if err := sn.put(snap); err != nil {
		return nil, err
	}
	out := snapshotView(snap)
	return &out, nil
}

// readManifest reads an exported snapshot's first entry, and answers it
// with the stream at its second.
func readManifest(body io.Reader) (*api.SnapshotManifest, *tar.Reader, error) {
	tr := tar.NewReader(body)
	h, err := tr.Next()
	if err != nil || h.Name != api.SnapshotManifestName || h.Size > maxManifestBytes {
		return nil, nil, notExported("it does not start with %s (of at most %d bytes)", api.SnapshotManifestName, maxManifestBytes)
	}
	var m api.SnapshotManifest
	dec := json.NewDecoder(io.LimitReader(tr, maxManifestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, nil, notExported("%s: %v", api.SnapshotManifestName, err)
	}
	if m.Format != api.SnapshotFormat {
		return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "the snapshot is of format %d; this sandboxd reads format %d", m.Format, api.SnapshotFormat)
	}
	if m.Memory {
		return nil, nil, api.Errorf(errdefs.ErrInvalidArgument, "the snapshot holds an interpreter's memory: this sandboxd imports files snapshots only")
	}
	if s := m.Session; s.Snapshot != "" || s.Count != 0 || s.Name != "" || len(s.Volumes) > 0 || s.DeadlineS != nil {
		return nil, nil, notExported("its session settings name a snapshot, a count, a name, volumes or a deadline")
	}
	return &m, tr, nil
}

func notExported(format string, args ...any) error {
	return api.Errorf(errdefs.ErrInvalidArgument, "not an exported snapshot: "+format, args...)
}

// writeImport writes an import's files, size bytes of r, as snapshot
// sid's folder, complete on return; the files must be a tar stream.
func (sn Snapshots) writeImport(sid string, r io.Reader, size int64) (retErr error) {
	dir := sn.d.paths.snapshot(sid)
	tmp := dir + ".new"
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	f, err := os.OpenFile(filepath.Join(tmp, snapshotTar), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(f, r, size); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return api.Errorf(errdefs.ErrInvalidArgument, "not an exported snapshot: its %s is cut short", api.SnapshotWorkspaceName)
		}
		return err
	}
	// Its entries are checked when a session is made; a stream that is
	// no tar at all is refused now.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	for tr := tar.NewReader(f); ; {
		if _, err := tr.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return api.Errorf(errdefs.ErrInvalidArgument, "not an exported snapshot: its %s is not a tar stream: %v", api.SnapshotWorkspaceName, err)
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return durable.RenameDir(tmp, dir)
}

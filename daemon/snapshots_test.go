package daemon

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/store"
)

// TestSnapshots: a snapshot keeps a session's files and settings, for its
// owner only; sessions made from it (one, several, a fork) start cold with
// those files, and their first execution says state_reset; the source is
// thawed after; bad requests lose nothing; a restart keeps snapshots and
// removes what a killed daemon left half made.
func TestSnapshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	sn := d.State().Snapshots
	src, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Labels: map[string]string{"team": "a"}, Env: map[string]string{"A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Files().PutFile(as(1000), src.ID, "/workspace/dir/a.txt", strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	snap, err := sn.CreateSnapshot(as(1000), src.ID, &api.CreateSnapshotRequest{Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.SessionID != src.ID || snap.Name != "first" || snap.OwnerUID != 1000 || snap.Memory || snap.Runtime != api.RuntimeRunc || snap.Template != src.Template {
		t.Fatalf("snapshot: %+v", snap)
	}
	if box := e.h.box(src.ID); box == nil || box.isFrozen() {
		t.Fatal("the source is not running thawed after its snapshot")
	}
	for name, c := range map[string]struct {
		ctx context.Context
		id  string
		req *api.CreateSnapshotRequest
	}{
		"name taken":      {as(1000), src.ID, &api.CreateSnapshotRequest{Name: "first"}},
		"bad name":        {as(1000), src.ID, &api.CreateSnapshotRequest{Name: "a/b"}},
		"another's":       {as(1001), src.ID, &api.CreateSnapshotRequest{}},
		"no such session": {as(1000), "nope", &api.CreateSnapshotRequest{}},
	} {
		if _, err := sn.CreateSnapshot(c.ctx, c.id, c.req); !errdefs.IsConflict(err) && !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if list, err := sn.ListSnapshots(as(1000)); err != nil || len(list) != 1 || list[0].ID != snap.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list, _ := sn.ListSnapshots(as(1001)); len(list) != 0 {
		t.Fatalf("a stranger's list: %+v", list)
	}
	if _, err := sn.GetSnapshot(as(1001), snap.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's get: %v", err)
	}
	if got, err := sn.GetSnapshot(as(1000), "first"); err != nil || got.ID != snap.ID {
		t.Fatalf("get by name: %+v %v", got, err)
	}

	// One session from it: cold, the files, the settings and the new
	// labels, state_reset once.
	e.h.mu.Lock()
	starts := e.h.starts
	e.h.mu.Unlock()
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Snapshot: "first", Labels: map[string]string{"copy": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	e.h.mu.Lock()
	cold := e.h.starts > starts
	e.h.mu.Unlock()
	if !cold || s.ID == src.ID || s.Template != src.Template || s.Labels["team"] != "a" || s.Labels["copy"] != "1" {
		t.Fatalf("from the snapshot: cold %v %+v", cold, s)
	}
	readFile(t, d, s.ID, "/workspace/dir/a.txt", "hello")
	if r := mustExec(t, d, as(1000), s.ID, "x = 1"); !r.StateReset {
		t.Fatal("the first execution does not say state_reset")
	}
	if r := mustExec(t, d, as(1000), s.ID, "x = 1"); r.StateReset {
		t.Fatal("the second execution says state_reset")
	}
	// What it writes is its own.
	if _, err := d.Files().PutFile(as(1000), s.ID, "/workspace/dir/a.txt", strings.NewReader("changed")); err != nil {
		t.Fatal(err)
	}
	readFile(t, d, src.ID, "/workspace/dir/a.txt", "hello")

	// Refused creates make nothing.
	before := len(mustList(t, d, as(1000)))
	for name, c := range map[string]struct {
		ctx context.Context
		req *api.CreateSessionRequest
	}{
		"template beside":  {as(1000), &api.CreateSessionRequest{Snapshot: snap.ID, Template: "python"}},
		"memory beside":    {as(1000), &api.CreateSessionRequest{Snapshot: snap.ID, MemoryMB: new(int64)}},
		"network beside":   {as(1000), &api.CreateSessionRequest{Snapshot: snap.ID, Network: api.NetworkOpen}},
		"a stranger's":     {as(1001), &api.CreateSessionRequest{Snapshot: snap.ID}},
		"no such snapshot": {as(1000), &api.CreateSessionRequest{Snapshot: "nope"}},
		"count without":    {as(1000), &api.CreateSessionRequest{Count: 2}},
		"count 101":        {as(1000), &api.CreateSessionRequest{Snapshot: snap.ID, Count: 101}},
		"count and name":   {as(1000), &api.CreateSessionRequest{Snapshot: snap.ID, Count: 2, Name: "x"}},
	} {
		_, err := sn.CreateSessions(c.ctx, c.req)
		if c.req.Count == 0 {
			_, err = d.CreateSession(c.ctx, c.req)
		}
		if !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(mustList(t, d, as(1000))); n != before {
		t.Fatalf("refused creates made sessions: %d, were %d", n, before)
	}

	// Several at once.
	many, err := sn.CreateSessions(as(1000), &api.CreateSessionRequest{Snapshot: snap.ID, Count: 3})
	if err != nil || len(many) != 3 {
		t.Fatalf("count 3: %d %v", len(many), err)
	}
	seen := map[string]bool{}
	for _, m := range many {
		seen[m.ID] = true
		readFile(t, d, m.ID, "/workspace/dir/a.txt", "hello")
	}
	if len(seen) != 3 {
		t.Fatalf("ids: %v", seen)
	}

	// A fork: the source's files as they are now, its snapshot kept by
	// no one.
	if _, err := d.Files().PutFile(as(1000), src.ID, "/workspace/b.txt", strings.NewReader("later")); err != nil {
		t.Fatal(err)
	}
	forks, err := sn.Fork(as(1000), src.ID, &api.ForkRequest{Count: 2})
	if err != nil || len(forks) != 2 {
		t.Fatalf("fork: %+v %v", forks, err)
	}
	for _, f := range forks {
		readFile(t, d, f.ID, "/workspace/b.txt", "later")
		if f.Labels["team"] != "a" {
			t.Fatalf("a fork's labels: %+v", f.Labels)
		}
	}
	if _, err := sn.Fork(as(1001), src.ID, &api.ForkRequest{}); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's fork: %v", err)
	}
	if _, err := sn.Fork(as(1000), src.ID, &api.ForkRequest{Count: 101}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("fork of 101: %v", err)
	}
	if list, _ := sn.ListSnapshots(as(1000)); len(list) != 1 {
		t.Fatalf("a fork's snapshot is listed: %+v", list)
	}
	if ents, _ := os.ReadDir(d.paths.snapshots()); len(ents) != 1 {
		t.Fatalf("snapshot folders after the fork: %d", len(ents))
	}

	// A restart keeps the snapshot, and removes what a killed daemon left:
	// a folder half written, a fork's snapshot.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(e.cfg.DataDir, "snapshots", "0123456789abcdef.new")
	if err := os.MkdirAll(half, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	forkRec := &store.Snapshot{SnapshotID: "fedcba9876543210", OwnerUID: 1000, Fork: true}
	if err := st.PutSnapshot(forkRec); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d = e.start()
	sn = d.State().Snapshots
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Fatalf("the half-made folder after a restart: %v", err)
	}
	if _, err := d.store.GetSnapshot(forkRec.SnapshotID); !errdefs.IsNotFound(err) {
		t.Fatalf("a fork's snapshot after a restart: %v", err)
	}
	again, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Snapshot: snap.ID})
	if err != nil {
		t.Fatal(err)
	}
	readFile(t, d, again.ID, "/workspace/dir/a.txt", "hello")

	// Deleted: gone with its folder; sessions made from it keep theirs.
	if err := sn.DeleteSnapshot(as(1001), snap.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's delete: %v", err)
	}
	if err := sn.DeleteSnapshot(as(1000), "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.paths.snapshot(snap.ID)); !os.IsNotExist(err) {
		t.Fatalf("the folder after the delete: %v", err)
	}
	if _, err := sn.GetSnapshot(as(1000), snap.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	readFile(t, d, again.ID, "/workspace/dir/a.txt", "hello")
}

// TestSnapshotDiskFull: a data dir that cannot hold a snapshot refuses it
// (429) and keeps nothing of it; the session runs on.
func TestSnapshotDiskFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Files().PutFile(as(1000), s.ID, "/workspace/a.txt", strings.NewReader(strings.Repeat("x", 64<<10))); err != nil {
		t.Fatal(err)
	}
	e.disk.setFree(e.cfg.DataDirMinFreeMB << 20)
	if _, err := d.State().Snapshots.CreateSnapshot(as(1000), s.ID, &api.CreateSnapshotRequest{}); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("a snapshot on a full data dir: %v", err)
	}
	if ents, _ := os.ReadDir(d.paths.snapshots()); len(ents) != 0 {
		t.Fatalf("left behind: %d folders", len(ents))
	}
	if r := mustExec(t, d, as(1000), s.ID, "x = 1"); r.Status != api.StatusOK {
		t.Fatalf("the session after: %+v", r)
	}
}

// readFile checks that session id's file at path holds want.
func readFile(t *testing.T, d *Daemon, id, path, want string) {
	t.Helper()
	f, _, err := d.Files().OpenFile(as(1000), id, path)
	if err != nil {
		t.Fatalf("%s %s: %v", id, path, err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != want {
		t.Fatalf("%s %s: %q, want %q", id, path, b, want)
	}
}

func mustList(t *testing.T, d *Daemon, ctx context.Context) []api.Session {
	t.Helper()
	l, err := d.ListSessions(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSnapshotExportImport: an exported snapshot imported by another user
// makes their sessions with its files and settings; a stream that is not
// a whole exported snapshot, or whose settings a create would refuse, is
// refused and keeps nothing.
func TestSnapshotExportImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	sn := d.State().Snapshots
	src, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Labels: map[string]string{"k": "v"}, Env: map[string]string{"E": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Files().PutFile(as(1000), src.ID, "/workspace/d/f.txt", strings.NewReader("moved")); err != nil {
		t.Fatal(err)
	}
	snap, err := sn.CreateSnapshot(as(1000), src.ID, &api.CreateSnapshotRequest{Name: "travel"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sn.ExportSnapshot(as(1001), snap.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's export: %v", err)
	}
	exported := exportSnapshot(t, sn, as(1000), snap.ID)
	in, err := sn.ImportSnapshot(as(1001), "", bytes.NewReader(exported))
	if err != nil {
		t.Fatal(err)
	}
	if in.OwnerUID != 1001 || in.Name != "travel" || in.ID == snap.ID || in.SessionID != "" || in.Template != snap.Template {
		t.Fatalf("imported: %+v", in)
	}
	s, err := d.CreateSession(as(1001), &api.CreateSessionRequest{Snapshot: "travel"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels["k"] != "v" || s.OwnerUID != 1001 {
		t.Fatalf("a session of the import: %+v", s)
	}
	f, _, err := d.Files().OpenFile(as(1001), s.ID, "/workspace/d/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(f); string(b) != "moved" {
		t.Fatalf("its file: %q", b)
	}
	f.Close()
	if _, err := sn.ImportSnapshot(as(1001), "", bytes.NewReader(exported)); !errdefs.IsConflict(err) {
		t.Fatalf("a second import of the name: %v", err)
	}

	manifest := func(edit func(m map[string]any)) []byte {
		var m map[string]any
		tr := tar.NewReader(bytes.NewReader(exported))
		if _, err := tr.Next(); err != nil {
			t.Fatal(err)
		}
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		return b
	}
	stream := func(entries ...[2]string) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range entries {
			_ = tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o600, Size: int64(len(e[1])), Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte(e[1]))
		}
		_ = tw.Close()
		return buf.Bytes()
	}
	var inner bytes.Buffer
	_ = tar.NewWriter(&inner).Close()
	good := string(manifest(func(map[string]any) {}))
	for name, body := range map[string][]byte{
		"empty":           nil,
		"not tar":         []byte("hello"),
		"no manifest":     stream([2]string{"workspace.tar", inner.String()}),
		"bad json":        stream([2]string{"snapshot.json", "{"}, [2]string{"workspace.tar", inner.String()}),
		"unknown field":   stream([2]string{"snapshot.json", string(manifest(func(m map[string]any) { m["x"] = 1 }))}, [2]string{"workspace.tar", inner.String()}),
		"format 2":        stream([2]string{"snapshot.json", string(manifest(func(m map[string]any) { m["format"] = 2 }))}, [2]string{"workspace.tar", inner.String()}),
		"no template":     stream([2]string{"snapshot.json", string(manifest(func(m map[string]any) { m["session"].(map[string]any)["template"] = "nope" }))}, [2]string{"workspace.tar", inner.String()}),
		"over the limits": stream([2]string{"snapshot.json", string(manifest(func(m map[string]any) { m["session"].(map[string]any)["memory_mb"] = 1 << 30 }))}, [2]string{"workspace.tar", inner.String()}),
		"no files":        stream([2]string{"snapshot.json", good}),
		"files not tar":   stream([2]string{"snapshot.json", good}, [2]string{"workspace.tar", "garbage that is not a tar stream at all"}),
		"cut short":       exported[:len(exported)-2048],
	} {
		_, err := sn.ImportSnapshot(as(1002), "x-"+strings.ReplaceAll(name, " ", "-"), bytes.NewReader(body))
		if !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if list, _ := sn.ListSnapshots(as(1002)); len(list) != 0 {
		t.Fatalf("refused imports kept: %+v", list)
	}
	if ents, _ := os.ReadDir(d.paths.snapshots()); len(ents) != 2 {
		t.Fatalf("snapshot folders: %d, want 2", len(ents))
	}
}

// FuzzReadManifest: whatever the stream, reading an import's manifest
// answers a manifest of this format or an invalid-argument error.
// exportSnapshot is the stream ExportSnapshot writes of snapshot ref, as
// the caller of ctx.
func exportSnapshot(t *testing.T, sn Snapshots, ctx context.Context, ref string) []byte {
	t.Helper()
	write, err := sn.ExportSnapshot(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func FuzzReadManifest(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	m := []byte(`{"format":1,"created_at":"2026-01-01T00:00:00Z","memory":false,"session":{"template":"python"}}`)
	_ = tw.WriteHeader(&tar.Header{Name: api.SnapshotManifestName, Mode: 0o600, Size: int64(len(m))})
	_, _ = tw.Write(m)
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, tr, err := readManifest(bytes.NewReader(b))
		if err != nil {
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("%v", err)
			}
			return
		}
		if m.Format != api.SnapshotFormat || m.Memory || tr == nil {
			t.Fatalf("%+v", m)
		}
	})
}

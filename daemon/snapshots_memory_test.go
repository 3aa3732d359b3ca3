package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/store"
)

// TestMemorySnapshots: a running runsc session's snapshot keeps its
// memory (the fake keeps its variables): sessions made from it, and
// forks, go on with the interpreter's state and say no state_reset; its
// /tmp comes with it. A process beside the interpreter refuses it (409,
// nothing kept); a runsc that cannot save memory, or other volumes than
// the source's, give files alone; an image the runtime cannot restore
// starts the session afresh on the files.
func TestMemorySnapshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	sn := d.State().Snapshots
	src, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Runtime: api.RuntimeRunsc})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, d, as(1000), src.ID, "x = 42")
	if _, err := d.Files().PutFile(as(1000), src.ID, "/tmp/t.txt", strings.NewReader("tmp")); err != nil {
		t.Fatal(err)
	}

	// A background process: refused, nothing kept, the source runs on.
	refusedBesideProcess(t, d, src.ID, func() error {
		_, err := sn.CreateSnapshot(as(1000), src.ID, &api.CreateSnapshotRequest{})
		return err
	})
	if list, _ := sn.ListSnapshots(as(1000)); len(list) != 0 {
		t.Fatalf("a refused snapshot is listed: %+v", list)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.cfg.DataDir, "snapshots")); len(ents) != 0 {
		t.Fatalf("a refused snapshot left %d folders", len(ents))
	}

	snap, err := sn.CreateSnapshot(as(1000), src.ID, &api.CreateSnapshotRequest{Name: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Memory || snap.Runtime != api.RuntimeRunsc {
		t.Fatalf("snapshot of a running runsc session: %+v", snap)
	}
	// Exported, it holds files and settings: another node imports it.
	if in, err := sn.ImportSnapshot(as(1000), "moved", bytes.NewReader(exportSnapshot(t, sn, as(1000), snap.ID))); err != nil || in.Memory {
		t.Fatalf("import of an exported memory snapshot: %+v %v", in, err)
	}
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Snapshot: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.StateReset || r.Result == nil || *r.Result != "42" {
		t.Fatalf("from a memory snapshot: %+v", r)
	}
	readFile(t, d, s.ID, "/tmp/t.txt", "tmp")
	forks, err := sn.Fork(as(1000), src.ID, &api.ForkRequest{Count: 2})
	if err != nil || len(forks) != 2 {
		t.Fatalf("fork: %+v %v", forks, err)
	}
	mustExec(t, d, as(1000), forks[0].ID, "x = 1")
	for i, want := range []string{"1", "42"} {
		if r := mustExec(t, d, as(1000), forks[i].ID, "x"); r.StateReset || r.Result == nil || *r.Result != want {
			t.Fatalf("fork %d: %+v", i, r)
		}
	}

	// An image this runtime cannot restore: afresh, on the files.
	if err := os.Remove(filepath.Join(e.cfg.DataDir, "snapshots", snap.ID, snapshotMemory, fakeMemory)); err != nil {
		t.Fatal(err)
	}
	s, err = d.CreateSession(as(1000), &api.CreateSessionRequest{Snapshot: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustExec(t, d, as(1000), s.ID, "x"); !r.StateReset {
		t.Fatalf("a failed restore's first execution: %+v", r)
	}

	// runc, and a runsc that cannot: files alone.
	runc := mustCreate(t, d, as(1000))
	if snap, err := sn.CreateSnapshot(as(1000), runc.ID, &api.CreateSnapshotRequest{}); err != nil || snap.Memory {
		t.Fatalf("a runc session's snapshot: %+v %v", snap, err)
	}
	e.h.mu.Lock()
	e.h.noCheckpoints = true
	e.h.mu.Unlock()
	if snap, err := sn.CreateSnapshot(as(1000), src.ID, &api.CreateSnapshotRequest{}); err != nil || snap.Memory {
		t.Fatalf("a snapshot where runsc cannot save memory: %+v %v", snap, err)
	}
	e.h.mu.Lock()
	e.h.noCheckpoints = false
	e.h.mu.Unlock()
	// A stopped session keeps no memory.
	if _, err := d.StopSession(as(1000), src.ID); err != nil {
		t.Fatal(err)
	}
	if snap, err := sn.CreateSnapshot(as(1000), src.ID, &api.CreateSnapshotRequest{}); err != nil || snap.Memory {
		t.Fatalf("a stopped session's snapshot: %+v %v", snap, err)
	}
}

// refusedBesideProcess starts a background process in session id, checks
// that op is refused (409 failed_precondition, saying why) while it runs,
// and ends it.
func refusedBesideProcess(t *testing.T, d *Daemon, id string, op func() error) {
	t.Helper()
	p, err := d.Processes().StartProcess(as(1000), id, &api.ProcessRequest{Argv: []string{"server"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op(); !errdefs.IsFailedPrecondition(err) || !strings.Contains(err.Error(), "beside the interpreter") {
		t.Fatalf("with a process running: %v", err)
	}
	if err := d.Processes().SignalProcess(as(1000), id, p.PID, "KILL"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { ps, _ := d.Processes().Processes(as(1000), id); return len(ps) == 1 }, "the process did not end")
}

// TestSameMounts: a memory image restores only over the mounts it was
// saved with.
func TestSameMounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		a, b []string
		want bool
	}{
		{"none", nil, nil, true},
		{"same, other order", []string{"/a", "/b"}, []string{"/b", "/a"}, true},
		{"one more", []string{"/a"}, []string{"/a", "/b"}, false},
		{"read-only", []string{"/a"}, []string{"/a:ro"}, false},
	} {
		if got := sameMounts(mountsOf(c.a), mountsOf(c.b)); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

// mountsOf are volume mounts at paths, ":ro" read-only.
func mountsOf(paths []string) []store.VolumeMount {
	var out []store.VolumeMount
	for _, p := range paths {
		path, ro := strings.CutSuffix(p, ":ro")
		out = append(out, store.VolumeMount{Path: path, ReadOnly: ro})
	}
	return out
}

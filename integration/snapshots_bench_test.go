package integration

import (
	"context"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// Snapshots' figures (issue 33), beside a cold create in the same run
// (BenchmarkCreateSession): a snapshot of a session holding 10 MB of
// files, a session made from it, and a fork of 5. runc keeps files only:
// a session from a snapshot is a cold create plus the files' copy.

// benchSnapshotSource is a session whose /workspace holds 10 MB in 100
// files.
func benchSnapshotSource(b *testing.B, d *daemon) string {
	id := d.session(b, nil)
	if _, err := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: api.LanguageShell,
		Code: `for i in $(seq 100); do head -c 100000 /dev/urandom > /workspace/f$i; done`}, nil); err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkSnapshotCreate times POST …/snapshots of a running session.
func BenchmarkSnapshotCreate(b *testing.B) {
	d := startDaemon(b, "pool_size = 0\n")
	ctx := context.Background()
	src := benchSnapshotSource(b, d)
	var sid string
	measure(b, func() error {
		s, err := d.c.CreateSnapshot(ctx, src, "")
		if err == nil {
			sid = s.ID
		}
		return err
	}, func() {
		if err := d.c.DeleteSnapshot(ctx, sid); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSnapshotNewSession times a session made from a snapshot,
// against BenchmarkCreateSession's cold create.
func BenchmarkSnapshotNewSession(b *testing.B) {
	d := startDaemon(b, "pool_size = 0\n")
	snap, err := d.c.CreateSnapshot(context.Background(), benchSnapshotSource(b, d), "")
	if err != nil {
		b.Fatal(err)
	}
	benchCreate(b, d, &api.CreateSessionRequest{Snapshot: snap.ID})
}

// BenchmarkFork5 times a fork of 5 sessions (goal under runsc, memory
// included: 250 ms; runc here, files only). make bench runs it 20 times.
func BenchmarkFork5(b *testing.B) {
	d := startDaemon(b, "pool_size = 0\n")
	benchFork5(b, d, benchSnapshotSource(b, d))
}

// benchFork5 times forks of 5 sessions of src; between forks (off the
// clock) they go.
func benchFork5(b *testing.B, d *daemon, src string) {
	ctx := context.Background()
	var made []api.Session
	measure(b, func() error {
		var err error
		made, err = d.c.Fork(ctx, src, 5)
		return err
	}, func() {
		for _, s := range made {
			if err := d.c.DeleteSession(ctx, s.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

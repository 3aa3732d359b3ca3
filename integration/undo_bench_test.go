package integration

import (
	"context"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// Undo's figures (issue 33), in the same run as BenchmarkExecRoundTrip
// (an execution with no checkpoints, the baseline): an undo of an
// interpreter holding 100 MB (goal p50 ≤ 10 ms), an execution that keeps
// a checkpoint (the interpreter's fork and /workspace's walk before it),
// and the memory a parked copy costs once the live interpreter touched
// 1 MB of its state.

// undoSession is a session keeping 2 checkpoints whose interpreter holds
// 100 MB.
func undoSession(b *testing.B, d *daemon) string {
	id := d.session(b, &api.CreateSessionRequest{Checkpoints: 2})
	if x := d.exec(b, id, "python", "state = bytearray(b'\\x01' * (100 << 20))", 60); x.Status != api.StatusOK {
		b.Fatalf("100 MB of state: %+v", x)
	}
	return id
}

// BenchmarkUndo times POST …/undo of one step; the execution it undoes
// runs off the clock.
func BenchmarkUndo(b *testing.B) {
	d := startDaemon(b, "")
	ctx := context.Background()
	id := undoSession(b, d)
	step := func() {
		if _, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: "python", Code: "x = 1"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	step()
	measure(b, func() error {
		_, err := d.c.Undo(ctx, id, 1)
		return err
	}, step)
}

// BenchmarkExecCheckpointed times an execution of a session keeping
// checkpoints, against BenchmarkExecRoundTrip's.
func BenchmarkExecCheckpointed(b *testing.B) {
	d := startDaemon(b, "")
	id := undoSession(b, d)
	req := &api.ExecRequest{Language: "python", Code: "x = 1"}
	measure(b, func() error {
		_, err := d.c.Exec(context.Background(), id, req, nil)
		return err
	}, nil)
}

// BenchmarkParkedCopyMemory reports, as parked-MB, what the session's
// memory grows by when its interpreter writes 1 MB of its 100 MB after a
// copy was parked (the copy's pages the write made its own), against
// the same write in a session without checkpoints (plain-MB).
func BenchmarkParkedCopyMemory(b *testing.B) {
	d := startDaemon(b, "")
	ctx := context.Background()
	grow := func(id string) float64 {
		b.Helper()
		if x := d.exec(b, id, "python", "state = bytearray(b'\\x01' * (100 << 20)); import gc; gc.collect()", 60); x.Status != api.StatusOK {
			b.Fatalf("%+v", x)
		}
		before, err := d.c.Stats(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if x := d.exec(b, id, "python", "state[:1 << 20] = b'x' * (1 << 20)", 60); x.Status != api.StatusOK {
			b.Fatalf("%+v", x)
		}
		after, err := d.c.Stats(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		return float64(int64(after.MemoryBytes)-int64(before.MemoryBytes)) / (1 << 20)
	}
	var parked, plain float64
	for range b.N {
		// 2: the copy parked before the state's own execution stays, as
		// the one parked before the write is added.
		parked += grow(d.session(b, &api.CreateSessionRequest{Checkpoints: 2}))
		plain += grow(d.session(b, nil))
	}
	b.ReportMetric(parked/float64(b.N), "parked-MB")
	b.ReportMetric(plain/float64(b.N), "plain-MB")
}

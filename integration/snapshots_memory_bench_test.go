package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// Memory snapshots' figures (issue 33), on the runsc make builds, beside
// that runsc's cold create in the same run (BenchmarkGvisorColdCreate):
// the snapshot of a session whose interpreter holds 50 MB (and how long
// its code saw itself paused), a session restored from it to a ready
// interpreter, and a fork of 5 with memory. Goals: restore ≤ 150 ms,
// fork × 5 ≤ 250 ms, source paused ≤ 60 ms. make bench runs them 5 times.

// gvisorBenchDaemon is a daemon whose sessions run on the runsc make
// builds, without a pool.
func gvisorBenchDaemon(b *testing.B) *daemon {
	return startDaemon(b, fmt.Sprintf("pool_size = 0\ndefault_runtime = \"runsc\"\n[runsc]\npath = %q\nplatform = \"systrap\"\n", runscNet(b)))
}

// gvisorBenchSource is a session whose interpreter holds 50 MB and runs a
// thread that notes the longest gap between its 1 ms ticks (maxgap(),
// which also starts a new count): what its code sees of a pause.
func gvisorBenchSource(b *testing.B, d *daemon) string {
	id := d.session(b, nil)
	if x, err := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: api.LanguagePython, Code: `
import threading, time
buf = bytearray(50 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
gap = [0.0]
def tick():
    last = time.monotonic()
    while True:
        time.sleep(0.001)
        now = time.monotonic()
        gap[0] = max(gap[0], now - last)
        last = now
threading.Thread(target=tick, daemon=True).start()
def maxgap():
    g, gap[0] = gap[0], 0.0
    return round(g * 1000, 1)
`}, nil); err != nil || x.Status != api.StatusOK {
		b.Fatalf("source: %+v %v", x, err)
	}
	return id
}

// BenchmarkGvisorColdCreate is the baseline: a cold create on the same
// runsc.
func BenchmarkGvisorColdCreate(b *testing.B) {
	benchCreate(b, gvisorBenchDaemon(b), &api.CreateSessionRequest{})
}

// BenchmarkGvisorSnapshot50MB times a memory snapshot of the source, and
// reports the longest its code saw itself paused (paused-ms, the worst
// of the run).
func BenchmarkGvisorSnapshot50MB(b *testing.B) {
	d := gvisorBenchDaemon(b)
	ctx := context.Background()
	src := gvisorBenchSource(b, d)
	d.py(b, src, "maxgap()")
	var sid string
	worst := 0.0
	measure(b, func() error {
		s, err := d.c.CreateSnapshot(ctx, src, "")
		if err == nil {
			sid = s.ID
			if !s.Memory {
				err = fmt.Errorf("the snapshot holds no memory: %+v", s)
			}
		}
		return err
	}, func() {
		x := d.py(b, src, "maxgap()")
		if x.Result != nil {
			if g, err := strconv.ParseFloat(*x.Result, 64); err == nil && g > worst {
				worst = g
			}
		}
		if err := d.c.DeleteSnapshot(ctx, sid); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(worst, "paused-ms")
}

// BenchmarkGvisorRestore times a session made from the memory snapshot,
// to an interpreter that answers with the source's variables.
func BenchmarkGvisorRestore(b *testing.B) {
	d := gvisorBenchDaemon(b)
	ctx := context.Background()
	snap, err := d.c.CreateSnapshot(ctx, gvisorBenchSource(b, d), "")
	if err != nil {
		b.Fatal(err)
	}
	benchCreate(b, d, &api.CreateSessionRequest{Snapshot: snap.ID})
}

// BenchmarkGvisorPageInFloor is the second baseline: 57 MiB of fresh
// memory (the pages of the source's image) touched page by page, in the
// benchmark's own process. A restore loads its whole image into fresh
// memory before the interpreter answers, five forks five of them on two
// CPUs: this host's page faults are their floor (~6 µs a page on a usual
// day, 13-25 µs on a slow one), which published figures, made where a
// fault costs a fraction of that, do not show.
func BenchmarkGvisorPageInFloor(b *testing.B) {
	measure(b, func() error {
		m, err := unix.Mmap(-1, 0, 57<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		for i := 0; i < len(m); i += os.Getpagesize() {
			m[i] = 1
		}
		return unix.Munmap(m)
	}, nil)
}

// BenchmarkGvisorFork5 times a fork of 5 sessions with memory.
func BenchmarkGvisorFork5(b *testing.B) {
	d := gvisorBenchDaemon(b)
	benchFork5(b, d, gvisorBenchSource(b, d))
}

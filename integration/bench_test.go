package integration

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Benchmarks of the paths agents pay for on every call, each next to a
// baseline measured in the same run (make bench). Each reports p50/p90/p99
// besides Go's mean.

func report(b *testing.B, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.90), "p90-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// measure times op b.N times, with what happens between ops (cleanup)
// off the clock.
func measure(b *testing.B, op func() error, between func()) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		if between != nil {
			b.StopTimer()
			between()
			b.StartTimer()
		}
	}
	report(b, times)
}

func BenchmarkCreateSession(b *testing.B) {
	benchCreate(b, startDaemon(b, "pool_size = 0\n"), &api.CreateSessionRequest{})
}

// benchCreate times creates of req; between creates (off the clock) the
// session goes and the pool, if any, refills.
func benchCreate(b *testing.B, d *daemon, req *api.CreateSessionRequest) {
	ctx := context.Background()
	var id string
	d.waitPool(b)
	measure(b, func() error {
		s, err := d.c.CreateSession(ctx, req)
		if err == nil {
			id = s.ID
		}
		return err
	}, func() {
		if err := d.c.DeleteSession(ctx, id); err != nil {
			b.Fatal(err)
		}
		d.waitPool(b)
	})
}

// BenchmarkCreateSessionPooled claims from a warm pool of 2.
func BenchmarkCreateSessionPooled(b *testing.B) {
	benchCreate(b, startDaemon(b, "pool_size = 2\n"), &api.CreateSessionRequest{})
}

func BenchmarkRunOneShotPooled(b *testing.B) {
	d := startDaemon(b, "pool_size = 2\n")
	req := &api.RunRequest{Language: "python", Code: "print(1)"}
	d.waitPool(b)
	measure(b, func() error {
		e, err := d.c.Run(context.Background(), req, nil)
		if err == nil && e.Stdout != "1\n" {
			err = fmt.Errorf("unexpected output %q", e.Stdout)
		}
		return err
	}, func() { d.waitPool(b) })
}

// waitPool waits until the warm pool is full.
func (d *daemon) waitPool(b *testing.B) {
	for i := 0; i < 1000; i++ {
		info, err := d.c.Info(context.Background())
		if err == nil && info.Pool.Idle >= max(info.Pool.Size, info.Pool.Target) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("the warm pool did not fill")
}

func benchExec(b *testing.B, req *api.ExecRequest) {
	d := startDaemon(b, "")
	id := d.session(b, nil)
	measure(b, func() error {
		_, err := d.c.Exec(context.Background(), id, req, nil)
		return err
	}, nil)
}

func BenchmarkExecRoundTrip(b *testing.B) {
	benchExec(b, &api.ExecRequest{Language: "python", Code: "x = 1"})
}

func BenchmarkExecShellRoundTrip(b *testing.B) {
	benchExec(b, &api.ExecRequest{Language: "shell", Code: "true"})
}

func BenchmarkRunOneShot(b *testing.B) {
	d := startDaemon(b, "")
	req := &api.RunRequest{Language: "python", Code: "print(1)"}
	measure(b, func() error {
		e, err := d.c.Run(context.Background(), req, nil)
		if err == nil && e.Stdout != "1\n" {
			err = fmt.Errorf("unexpected output %q", e.Stdout)
		}
		return err
	}, nil)
}

// Baselines: the same work with no daemon.

func benchCommand(b *testing.B, name string, args ...string) {
	measure(b, func() error {
		out, err := exec.Command(name, args...).Output()
		if err == nil && string(out) != "1\n" {
			err = fmt.Errorf("%s: unexpected output %q", name, out)
		}
		return err
	}, nil)
}

func BenchmarkBaselinePlainPython(b *testing.B) {
	benchCommand(b, "/usr/bin/python3", "-c", "print(1)")
}

func BenchmarkBaselineBwrapPython(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap is not installed (make bench installs bubblewrap)")
	}
	benchCommand(b, "bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent",
		"/usr/bin/python3", "-c", "print(1)")
}

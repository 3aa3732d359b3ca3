package integration

import (
	"context"
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

func BenchmarkCreateSession(b *testing.B) {
	d := startDaemon(b, "")
	ctx := context.Background()
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		b.StopTimer()
		if err := d.c.DeleteSession(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	report(b, times)
}

func BenchmarkExecRoundTrip(b *testing.B) {
	d := startDaemon(b, "")
	id := d.session(b, nil)
	ctx := context.Background()
	req := &api.ExecRequest{Language: "python", Code: "x = 1"}
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := d.c.Exec(ctx, id, req, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	report(b, times)
}

func BenchmarkExecShellRoundTrip(b *testing.B) {
	d := startDaemon(b, "")
	id := d.session(b, nil)
	ctx := context.Background()
	req := &api.ExecRequest{Language: "shell", Code: "true"}
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := d.c.Exec(ctx, id, req, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	report(b, times)
}

func BenchmarkRunOneShot(b *testing.B) {
	d := startDaemon(b, "")
	ctx := context.Background()
	req := &api.RunRequest{Language: "python", Code: "print(1)"}
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		e, err := d.c.Run(ctx, req, nil)
		if err != nil || e.Stdout != "1\n" {
			b.Fatal(e, err)
		}
		times = append(times, time.Since(start))
	}
	report(b, times)
}

// Baselines: the same work with no daemon.

func benchCommand(b *testing.B, name string, args ...string) {
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := exec.Command(name, args...).Output()
		if err != nil || string(out) != "1\n" {
			b.Fatalf("%s: %q %v", name, out, err)
		}
		times = append(times, time.Since(start))
	}
	report(b, times)
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

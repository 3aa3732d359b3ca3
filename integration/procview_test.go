package integration

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestProcView checks a sandbox sees its own limits, through lxcfs, where
// programs size themselves from: /proc/meminfo's MemTotal is memory_mb,
// nproc (the affinity mask, the sandbox's cpuset), os.cpu_count()
// (/sys/devices/system/cpu/online) and /proc/stat's cpuN lines are cpus
// rounded up, and /proc/uptime counts from the sandbox's start.
func TestProcView(t *testing.T) {
	t.Parallel()
	mnt := lxcfsFor(t)
	d := startDaemon(t, fmt.Sprintf("lxcfs_dir = %q\n", mnt))
	// A serving lxcfs_dir is used as it is (the system's).
	if pv := d.info(t).ProcView; pv.ServedBy != api.ProcViewSystem {
		t.Errorf("info says proc_view %+v, want served by the system's lxcfs", pv)
	}
	cases := []struct {
		memoryMB int64
		cpus     float64
	}{{256, 1}, {320, 1.5}}
	for _, c := range cases {
		want := int(math.Ceil(c.cpus))
		if want > runtime.NumCPU() {
			t.Logf("cpus %v: this host has %d CPUs only", c.cpus, runtime.NumCPU())
			continue
		}
		t.Run(fmt.Sprintf("cpus=%v", c.cpus), func(t *testing.T) {
			mem, cpus := c.memoryMB, c.cpus
			id := d.session(t, &api.CreateSessionRequest{MemoryMB: &mem, CPUs: &cpus})
			e := d.sh(t, id, `grep '^MemTotal:' /proc/meminfo; nproc; grep -c '^cpu[0-9]' /proc/stat; grep -c '^processor' /proc/cpuinfo; cut -d' ' -f1 /proc/uptime; cat /sys/devices/system/cpu/online`)
			if e.ExitCode != 0 {
				t.Fatalf("exit %v: %s %s", e.ExitCode, e.Stdout, e.Stderr)
			}
			lines := strings.Fields(strings.ReplaceAll(e.Stdout, "MemTotal:", ""))
			if len(lines) != 7 {
				t.Fatalf("unexpected output %q", e.Stdout)
			}
			if got, wantKB := lines[0], strconv.FormatInt(mem*1024, 10); got != wantKB || lines[1] != "kB" {
				t.Errorf("MemTotal %s %s, want %s kB", got, lines[1], wantKB)
			}
			for i, what := range []string{"nproc", "/proc/stat cpuN lines", "/proc/cpuinfo processors"} {
				if lines[2+i] != strconv.Itoa(want) {
					t.Errorf("%s = %s, want %d", what, lines[2+i], want)
				}
			}
			if up, err := strconv.ParseFloat(lines[5], 64); err != nil || up > 120 {
				t.Errorf("/proc/uptime %s: not the sandbox's own uptime", lines[5])
			}
			t.Logf("cpu/online %s", lines[6])
			py := d.py(t, id, `import os; (os.cpu_count(), len(os.sched_getaffinity(0)))`)
			if got, w := result(py), fmt.Sprintf("(%d, %d)", want, want); got != w {
				t.Errorf("(os.cpu_count(), len(os.sched_getaffinity(0))) = %s, want %s", got, w)
			}
		})
	}
}

// TestProcViewPoolClaim checks a warm sandbox, started with the default
// limits (cpus 1: one CPU of its own), takes the claiming session's: its
// memory in /proc/meminfo, and every CPU back when it asks for as many as
// the host has.
func TestProcViewPoolClaim(t *testing.T) {
	t.Parallel()
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: every sandbox runs on all of them")
	}
	mnt := lxcfsFor(t)
	d := startDaemon(t, fmt.Sprintf("lxcfs_dir = %q\npool_size = 1\n", mnt))
	waitFor(t, func() bool { return d.info(t).Pool.Idle == 1 })
	mem, cpus := int64(288), float64(runtime.NumCPU())
	id := d.session(t, &api.CreateSessionRequest{MemoryMB: &mem, CPUs: &cpus})
	if !strings.Contains(d.log(), `"from":"pool"`) {
		t.Fatalf("the create did not come from the pool:\n%s", d.log())
	}
	e := d.sh(t, id, `grep '^MemTotal:' /proc/meminfo; nproc`)
	if want := fmt.Sprintf("MemTotal: %d kB %d", mem*1024, runtime.NumCPU()); strings.Join(strings.Fields(e.Stdout), " ") != want {
		t.Fatalf("got %q, want %q (stderr %q)", e.Stdout, want, e.Stderr)
	}
}

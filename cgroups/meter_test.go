package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMeter measures fake cgroup folders of both versions: the CPU time
// between the ends, and the peak as each kernel gives it (v1 resets it at
// Start; v2 before 6.12 cannot, so a peak that did not rise is the floor of
// the usages at the ends).
func TestMeter(t *testing.T) {
	write := func(dir, name, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		v2       bool
		fixed    bool              // the v2 peak cannot be reset
		before   map[string]string // files at Start
		after    map[string]string // files at Stop
		wantCPU  time.Duration
		wantPeak uint64
	}{
		{name: "v1", before: map[string]string{"cpuacct.usage": "1000000\n", "memory.usage_in_bytes": "100\n", "memory.max_usage_in_bytes": "900\n"},
			after:   map[string]string{"cpuacct.usage": "3500000\n", "memory.usage_in_bytes": "150\n", "memory.max_usage_in_bytes": "700\n"},
			wantCPU: 2500 * time.Microsecond, wantPeak: 700},
		{name: "v2 resettable", v2: true, before: map[string]string{"cpu.stat": "usage_usec 1000\n", "memory.current": "100\n", "memory.peak": "5000\n"},
			after:   map[string]string{"cpu.stat": "usage_usec 1500\n", "memory.current": "100\n", "memory.peak": "400\n"},
			wantCPU: 500 * time.Microsecond, wantPeak: 400},
		{name: "v2 peak rose", v2: true, fixed: true, before: map[string]string{"cpu.stat": "usage_usec 1000\nuser_usec 900\n", "memory.current": "100\n", "memory.peak": "500\n"},
			after:   map[string]string{"cpu.stat": "usage_usec 3000\nuser_usec 2000\n", "memory.current": "200\n", "memory.peak": "800\n"},
			wantCPU: 2 * time.Millisecond, wantPeak: 800},
		{name: "v2 peak did not rise", v2: true, fixed: true, before: map[string]string{"cpu.stat": "usage_usec 1000\n", "memory.current": "300\n", "memory.peak": "900\n"},
			after:   map[string]string{"cpu.stat": "usage_usec 1000\n", "memory.current": "200\n", "memory.peak": "900\n"},
			wantCPU: 0, wantPeak: 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// A hybrid host's v1 paths come with the unified one.
			paths := map[string]string{"": t.TempDir(), "cpu": dir, "cpuacct": dir, "memory": dir}
			if tt.v2 {
				paths = map[string]string{"": dir}
			}
			for k, v := range tt.before {
				write(dir, k, v)
			}
			m := NewMeter(paths)
			m.fixedPeak = tt.fixed
			k := m.Start()
			if !tt.v2 {
				// Start reset the peak (a plain file keeps the write,
				// over its first byte: it was "900").
				if b, _ := os.ReadFile(filepath.Join(dir, "memory.max_usage_in_bytes")); len(b) == 0 || b[0] != '0' {
					t.Errorf("peak not reset: %q", b)
				}
			}
			for k, v := range tt.after {
				write(dir, k, v)
			}
			cpu, peak := m.Stop(k)
			if cpu != tt.wantCPU || peak != tt.wantPeak {
				t.Errorf("Stop = %v, %d; want %v, %d", cpu, peak, tt.wantCPU, tt.wantPeak)
			}
		})
	}
	var none *Meter
	if cpu, peak := none.Stop(none.Start()); cpu != 0 || peak != 0 || NewMeter(map[string]string{"pids": "/x"}) != nil {
		t.Error("a meter of nothing measures nothing")
	}
}

// TestMeterHoldsItsFiles: a meter reads its CPU and usage files through
// descriptors it keeps (what was written since shows), keeps the peak's
// descriptors an interval gave back (one for each interval at once),
// closes them all on Close, and reads by path after.
func TestMeterHoldsItsFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"cpu.stat": "usage_usec 1000\n", "memory.current": "100\n", "memory.peak": "100\n"}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held := func() (n int) {
		t.Helper()
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && filepath.Dir(l) == dir {
				n++
			}
		}
		return n
	}
	m := NewMeter(map[string]string{"": dir})
	if n := held(); n != 2 {
		t.Fatalf("the meter holds %d of its cgroup's files, want 2", n)
	}
	for round := range 3 {
		k := m.Start()
		if err := os.WriteFile(filepath.Join(dir, "cpu.stat"), fmt.Appendf(nil, "usage_usec %d\nuser_usec 5\n", 2000+round*1000), 0o644); err != nil {
			t.Fatal(err)
		}
		if cpu, _ := m.Stop(k); cpu != time.Millisecond {
			t.Fatalf("round %d: cpu %v, want 1ms", round, cpu)
		}
		if round == 0 {
			if n := held(); n != 3 {
				t.Fatalf("after an interval the meter holds %d files, want 3 (its peak's kept)", n)
			}
			// Two at once reset and read the peak through two
			// descriptors; both are kept.
			k1, k2 := m.Start(), m.Start()
			if k1.peakFD < 0 || k2.peakFD < 0 || k1.peakFD == k2.peakFD {
				t.Fatalf("two intervals at once: peak descriptors %d and %d", k1.peakFD, k2.peakFD)
			}
			m.Stop(k2)
			m.Stop(k1)
			if n := held(); n != 4 {
				t.Fatalf("after two intervals at once the meter holds %d files, want 4", n)
			}
		}
		if round == 1 {
			m.Close()
			if n := held(); n != 0 {
				t.Fatalf("closed, the meter holds %d files", n)
			}
		}
	}
	m.Close() // twice is fine
}

// BenchmarkMeter: an execution's Start and Stop through held files
// (NewMeter's) beside the same by path (a closed meter, as every
// execution was before issue 34), on plain files standing in for a
// cgroup's.
func BenchmarkMeter(b *testing.B) {
	dir := b.TempDir()
	for k, v := range map[string]string{"cpu.stat": "usage_usec 1000\nuser_usec 900\nsystem_usec 100\n", "memory.current": "100\n", "memory.peak": "100\n"} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, held := range []bool{false, true} {
		b.Run(map[bool]string{false: "by-path", true: "held"}[held], func(b *testing.B) {
			m := NewMeter(map[string]string{"": dir})
			defer m.Close()
			if !held {
				m.Close()
			}
			for b.Loop() {
				m.Stop(m.Start())
			}
		})
	}
}

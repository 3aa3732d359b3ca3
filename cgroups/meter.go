package cgroups

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Meter measures what one cgroup uses over an interval (an execution): its
// CPU time and its memory peak. It reads a few files at each end, not
// libcontainer's whole stats.
//
// The peak of an interval needs the kernel's peak reset to the start:
// cgroup v1 resets memory.max_usage_in_bytes on a write; v2's memory.peak
// resets per open file from Linux 6.12 on (the interval reads back through
// the file it reset). Before 6.12 v2 has only the peak since the cgroup
// began: the interval's peak is that peak when it rose during the interval
// (it was reached then), else the higher of the usage at either end (a
// floor: a short spike in between is missed).
type Meter struct {
	v2               bool
	cpu, peak, usage string
	// fixedPeak says the v2 peak cannot be reset (a test's stand-in for a
	// kernel before 6.12, where opening it for writing fails).
	fixedPeak bool

	// mu guards the two files the meter keeps open from Close: a read of
	// one must not meet its number closed and given to another file.
	mu sync.RWMutex
	// cpuFD and usageFD are cpu and usage, open for the meter's life
	// (until Close), read at offset 0: an execution reads each at both
	// ends, and an open is a path walk and a kernfs open each time
	// (issue 34). -1: read by path (the open failed, or closed).
	cpuFD, usageFD int
}

// NewMeter is a meter of the cgroup at paths, as libcontainer names them
// (v1: a path per controller; v2: the "" key, which a hybrid host has too,
// without controllers). It is nil when paths name no cgroup it can read,
// and a nil Meter measures nothing. It holds two of the cgroup's files
// open until Close.
func NewMeter(paths map[string]string) *Meter {
	var m *Meter
	if cpu, mem := paths["cpuacct"], paths["memory"]; cpu != "" && mem != "" {
		m = &Meter{cpu: filepath.Join(cpu, "cpuacct.usage"), peak: filepath.Join(mem, "memory.max_usage_in_bytes"), usage: filepath.Join(mem, "memory.usage_in_bytes")}
	} else if p, ok := paths[""]; ok {
		m = &Meter{v2: true, cpu: filepath.Join(p, "cpu.stat"), peak: filepath.Join(p, "memory.peak"), usage: filepath.Join(p, "memory.current")}
	} else {
		return nil
	}
	m.cpuFD, m.usageFD = openOrNone(m.cpu), openOrNone(m.usage)
	return m
}

// openOrNone opens a cgroup file to read, or says -1.
func openOrNone(path string) int {
	fd, err := openFile(path, unix.O_RDONLY)
	if err != nil {
		return -1
	}
	return fd
}

// Close closes the files the meter holds; it measures by path after.
func (m *Meter) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, fd := range []*int{&m.cpuFD, &m.usageFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// read reads the file held as *fd, or path when none is.
func (m *Meter) read(fd *int, path string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if *fd < 0 {
		return readFile(path)
	}
	return preadFile(*fd, path)
}

// Mark is the start of an interval.
type Mark struct {
	cpu   time.Duration
	usage uint64
	// peak is the v2 peak since the cgroup began, when the kernel cannot
	// reset it; peakFile the file the reset applies to, when it can.
	peak     uint64
	peakFile *os.File
}

// Start begins an interval.
func (m *Meter) Start() *Mark {
	if m == nil {
		return nil
	}
	k := &Mark{cpu: m.cpuTime()}
	k.usage, _ = m.usageNow()
	if !m.v2 {
		_ = writeFile(m.peak, []byte("0")) // the peak restarts from the usage now
		return k
	}
	// Before 6.12 memory.peak has no write: the open fails.
	if f, err := openRW(m.peak); err == nil && !m.fixedPeak {
		if _, err := f.Write([]byte("reset")); err == nil {
			k.peakFile = f
			return k
		}
		f.Close()
	} else if err == nil {
		f.Close()
	}
	k.peak, _ = readUint(m.peak)
	return k
}

// Stop ends the interval k began: the CPU time used and the memory peak
// reached since. Zero from a nil Meter.
func (m *Meter) Stop(k *Mark) (cpu time.Duration, peak uint64) {
	if m == nil || k == nil {
		return 0, 0
	}
	cpu = max(m.cpuTime()-k.cpu, 0)
	usage, _ := m.usageNow()
	switch {
	case k.peakFile != nil:
		b := make([]byte, 32)
		n, _ := k.peakFile.ReadAt(b, 0)
		k.peakFile.Close()
		peak, _ = parseUint(b[:n])
	case m.v2:
		if p, _ := readUint(m.peak); p > k.peak {
			peak = p
		}
	default:
		peak, _ = readUint(m.peak)
	}
	return cpu, max(peak, usage, k.usage)
}

// cpuTime is the cgroup's CPU time so far, 0 when unreadable.
func (m *Meter) cpuTime() time.Duration {
	b, err := m.read(&m.cpuFD, m.cpu)
	if err != nil {
		return 0
	}
	if !m.v2 {
		ns, _ := parseUint(b)
		return time.Duration(ns)
	}
	us, _ := parseKey(b, "usage_usec")
	return time.Duration(us) * time.Microsecond
}

// usageNow is the cgroup's memory usage now.
func (m *Meter) usageNow() (uint64, error) {
	b, err := m.read(&m.usageFD, m.usage)
	if err != nil {
		return 0, err
	}
	return parseUint(b)
}

func readUint(path string) (uint64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	return parseUint(b)
}

func parseUint(b []byte) (uint64, error) {
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}

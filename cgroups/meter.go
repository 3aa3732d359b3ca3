package cgroups

import (
	"bytes"
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

	// mu guards the files the meter keeps open from Close: a read of one
	// must not meet its number closed and given to another file.
	mu sync.RWMutex
	// cpuFD and usageFD are cpu and usage, open for the meter's life
	// (until Close), read at offset 0: an execution reads each at both
	// ends, and an open is a path walk and a kernfs open each time
	// (issue 34). -1: read by path (the open failed, or closed).
	cpuFD, usageFD int
	// peakFDs are peak, open to read and write, that no interval holds:
	// an interval takes one at Start (opening another when none is
	// free), resets the peak through it and reads it back at Stop, then
	// gives it back. v2's reset applies to the descriptor that wrote it,
	// so intervals at once (executions in two contexts) each need their
	// own; v1's resets the cgroup's. closed: Close ran (a descriptor
	// given back after is closed).
	peakFDs []int
	closed  bool
	// noReset says peak cannot be reset (v2 before 6.12, where it opens
	// only to read): known from the first try, not tried again.
	noReset bool
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
	for _, fd := range m.peakFDs {
		unix.Close(fd)
	}
	m.peakFDs, m.closed = nil, true
}

// takePeak is a descriptor of peak, open to read and write, for one
// interval; -1 when the peak cannot be reset through one.
func (m *Meter) takePeak() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.noReset || m.fixedPeak {
		return -1
	}
	if n := len(m.peakFDs); n > 0 {
		fd := m.peakFDs[n-1]
		m.peakFDs = m.peakFDs[:n-1]
		return fd
	}
	fd, err := openFile(m.peak, unix.O_RDWR)
	if err != nil {
		// Before 6.12 v2's memory.peak has no write: the open fails.
		m.noReset = m.v2
		return -1
	}
	return fd
}

// givePeak gives back an interval's descriptor of peak.
func (m *Meter) givePeak(fd int) {
	if fd < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		unix.Close(fd)
		return
	}
	m.peakFDs = append(m.peakFDs, fd)
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
	// reset it; peakFD the descriptor the reset applies to, when it can
	// (-1: none).
	peak   uint64
	peakFD int
}

// Start begins an interval.
func (m *Meter) Start() *Mark {
	if m == nil {
		return nil
	}
	k := &Mark{cpu: m.cpuTime(), peakFD: -1}
	k.usage, _ = m.usageNow()
	// v1's peak restarts from the usage now at any write; v2's at one of
	// "reset", for reads through the descriptor that wrote it.
	reset := []byte("reset")
	if !m.v2 {
		reset = []byte("0")
	}
	if fd := m.takePeak(); fd >= 0 {
		if _, err := retryEINTR(func() (int, error) { return unix.Pwrite(fd, reset, 0) }); err == nil {
			k.peakFD = fd
			return k
		}
		unix.Close(fd)
	}
	if !m.v2 {
		_ = writeFile(m.peak, reset)
		return k
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
	case k.peakFD >= 0:
		b, err := preadFile(k.peakFD, m.peak)
		if err == nil {
			peak, _ = parseUint(b)
		}
		m.givePeak(k.peakFD)
		k.peakFD = -1
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

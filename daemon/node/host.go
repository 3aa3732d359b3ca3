package node

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Host is where GET /v1/node reads the host: its files and this
// process's view of it, or a test's stand-ins.
type Host struct {
	// MachineID and Meminfo are the paths of /etc/machine-id and
	// /proc/meminfo.
	MachineID string
	Meminfo   string
	// CPUs are the CPUs this process may run on (its affinity mask, which
	// sandboxes inherit).
	CPUs     int
	Hostname func() (string, error)
}

// RealHost is this host.
func RealHost() *Host {
	return &Host{MachineID: "/etc/machine-id", Meminfo: "/proc/meminfo", CPUs: runtime.NumCPU(), Hostname: os.Hostname}
}

// memoryMB is the host's memory (MemTotal), in MiB. Read at each call: a
// VM's memory can be resized while the daemon runs.
func (h *Host) memoryMB() (int64, error) {
	f, err := os.Open(h.Meminfo)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "MemTotal:       16318480 kB"
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: bad MemTotal line %q", h.Meminfo, sc.Text())
		}
		return kb >> 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no MemTotal line", h.Meminfo)
}

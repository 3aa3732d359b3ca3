package daemon

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// nodeHost is where GET /v1/node reads the host: its files and this
// process's view of it, or a test's stand-ins.
type nodeHost struct {
	// machineID and meminfo are the paths of /etc/machine-id and
	// /proc/meminfo.
	machineID string
	meminfo   string
	// cpus are the CPUs this process may run on (its affinity mask, which
	// sandboxes inherit).
	cpus     int
	hostname func() (string, error)
}

// realNodeHost is this host.
func realNodeHost() *nodeHost {
	return &nodeHost{machineID: "/etc/machine-id", meminfo: "/proc/meminfo", cpus: runtime.NumCPU(), hostname: os.Hostname}
}

// memoryMB is the host's memory (MemTotal), in MiB. Read at each call: a
// VM's memory can be resized while the daemon runs.
func (h *nodeHost) memoryMB() (int64, error) {
	f, err := os.Open(h.meminfo)
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
			return 0, fmt.Errorf("%s: bad MemTotal line %q", h.meminfo, sc.Text())
		}
		return kb >> 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no MemTotal line", h.meminfo)
}

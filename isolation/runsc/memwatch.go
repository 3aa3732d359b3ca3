package runsc

import (
	"fmt"
	"os"
	"strconv"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fscommon"
	"golang.org/x/sys/unix"
)

// gVisor keeps no memory limit inside a sandbox (its cgroupfs accounts,
// google/gvisor#2520), and the host's kernel, at the cgroup's limit,
// kills the Sentry: the whole sandbox, where under runc the OOM killer
// ends one process (the interpreter, or a shell command's child) and the
// session goes on. So a runsc sandbox's cgroup gets a hard limit with
// room above the session's (gvisorMemoryRoom), and a mark at the
// session's limit: when its memory reaches it, the daemon has the agent
// kill the process with the most resident memory (agent.OpReclaim), the
// OOM killer's choice. The mark is memory.high on cgroup v2 (memory.events
// says when it is passed, and the kernel throttles the sandbox's
// allocations above it meanwhile) and a memory threshold (eventfd) on v1.

// gvisorMemoryRoom is what a runsc sandbox's cgroup may hold above the
// session's memory limit before the kernel kills the Sentry: the Sentry's
// and gofer's own memory (~24 MiB idle, measured) and what the code
// allocates between the mark and the kill (v1 does not throttle).
func gvisorMemoryRoom(limit int64) int64 { return max(96<<20, limit/4) }

// reclaimPause is how long the memory may stay at the mark, not growing,
// after a kill before another process is killed: gVisor hands a dead
// process's memory back to the host within ~2 s (measured), not at once.
// Memory that grows by reclaimGrowth past where it was at the last kill
// is another process's, killed at once (a memory bomb right after one).
const (
	reclaimPause  = 2500 * time.Millisecond
	reclaimGrowth = 16 << 20
)

// hotInterval is how often the memory is read while it is at the mark:
// on v1 no event comes until it has gone below it again.
const hotInterval = 10 * time.Millisecond

// watchMemory calls reclaim whenever sandbox cgroup cg's memory reaches
// limit (see reclaimPause), until exited is closed. A limit of 0 watches
// nothing.
func watchMemory(cg ocgroups.Manager, limit int64, exited <-chan struct{}, reclaim func()) error {
	if limit <= 0 {
		return nil
	}
	var (
		events     *os.File
		dir, usage string
		keep       *os.File // v1: the usage file the threshold is registered on
		err        error
	)
	if ocgroups.IsCgroup2UnifiedMode() {
		dir, usage = cg.Path(""), "memory.current"
		if err := ocgroups.WriteFile(dir, "memory.high", strconv.FormatInt(limit, 10)); err != nil {
			return fmt.Errorf("memory mark: %w", err)
		}
		events, err = inotifyFile(dir + "/memory.events")
	} else {
		dir, usage = cg.Path("memory"), "memory.usage_in_bytes"
		events, keep, err = thresholdFile(dir, limit)
	}
	if err != nil {
		return fmt.Errorf("memory mark: %w", err)
	}
	poke := make(chan struct{}, 1)
	go func() {
		// An event says the mark was passed (or, on v1, crossed either
		// way).
		buf := make([]byte, 4096)
		for {
			if _, err := events.Read(buf); err != nil {
				return // closed: the sandbox exited
			}
			select {
			case poke <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		defer func() {
			events.Close()
			if keep != nil {
				keep.Close()
			}
		}()
		m := marker{limit: limit}
		var tick <-chan time.Time
		for {
			select {
			case <-exited:
				return
			case <-poke:
			case <-tick:
			}
			n, err := fscommon.GetCgroupParamInt(dir, usage)
			if err != nil {
				continue
			}
			if m.reached(n, time.Now()) {
				reclaim()
			}
			tick = nil
			if n >= limit {
				tick = time.After(hotInterval)
			}
		}
	}()
	return nil
}

// marker decides, from readings of a sandbox's memory, when a process
// must be killed for it.
type marker struct {
	limit  int64
	lastAt time.Time // the last kill
	lastN  int64     // the memory then, or the least read since
}

// reached reports whether memory n, read at now, calls for a kill: at the
// limit for the first time, grown by reclaimGrowth past the last kill's
// (or what was left of it), or still there and not shrinking reclaimPause
// after it.
func (m *marker) reached(n int64, now time.Time) bool {
	if n < m.limit {
		m.lastN = min(m.lastN, n) // freed: the next crossing is new memory
		return false
	}
	if m.lastAt.IsZero() || n > m.lastN+reclaimGrowth || now.Sub(m.lastAt) >= reclaimPause && n >= m.lastN {
		m.lastAt, m.lastN = now, n
		return true
	}
	m.lastN = min(m.lastN, n)
	return false
}

// inotifyFile is a descriptor that reads an event whenever file changes.
func inotifyFile(file string) (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, file, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "inotify"), nil
}

// thresholdFile is an eventfd the kernel signals when memory cgroup v1
// dir's usage crosses threshold, and the usage file it is registered on
// (kept open while it is in use).
func thresholdFile(dir string, threshold int64) (*os.File, *os.File, error) {
	usage, err := os.Open(dir + "/memory.usage_in_bytes")
	if err != nil {
		return nil, nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		usage.Close()
		return nil, nil, err
	}
	ev := os.NewFile(uintptr(efd), "eventfd")
	line := fmt.Sprintf("%d %d %d", efd, usage.Fd(), threshold)
	if err := ocgroups.WriteFile(dir, "cgroup.event_control", line); err != nil {
		ev.Close()
		usage.Close()
		return nil, nil, err
	}
	return ev, usage, nil
}

package runc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// hostProcs are the host pids of a libcontainer sandbox's processes, by
// the pid the sandbox gives each.
func (c runcContainer) hostProcs() (map[int]int, error) {
	paths, err := c.CgroupPaths()
	if err != nil {
		return nil, err
	}
	dir := paths["freezer"]
	if dir == "" {
		dir = paths[""]
	}
	pids, err := ocgroups.GetAllPids(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]int, len(pids))
	for _, host := range notSelf(pids) {
		if inner, err := nsPID(host); err == nil {
			out[inner] = host
		}
	}
	return out, nil
}

// nsPID is the pid of host process pid in its innermost pid namespace.
func nsPID(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			f := strings.Fields(string(v))
			if len(f) == 0 {
				break
			}
			return strconv.Atoi(f[len(f)-1])
		}
	}
	return 0, fmt.Errorf("no NSpid for %d", pid)
}

func (c runcContainer) Processes() ([]isolation.ProcessInfo, error) {
	byInner, err := c.hostProcs()
	if err != nil {
		return nil, err
	}
	inner := make(map[int]int, len(byInner)) // host → sandbox pid
	for in, host := range byInner {
		inner[host] = in
	}
	boot := bootTime()
	var out []isolation.ProcessInfo
	for in, host := range byInner {
		p, hostPPID, err := readProc(host, boot)
		if err != nil {
			continue // it ended meanwhile
		}
		p.PID, p.PPID = in, inner[hostPPID]
		out = append(out, p)
	}
	isolation.SortByPID(out)
	return out, nil
}

func (c runcContainer) Signal(pid int, sig unix.Signal) error {
	byInner, err := c.hostProcs()
	if err != nil {
		return err
	}
	host, ok := byInner[pid]
	if !ok {
		return isolation.ErrNoProcess
	}
	// A pidfd: the process cannot be swapped for a stranger in between.
	fd, err := unix.PidfdOpen(host, 0)
	if err != nil {
		return isolation.ErrNoProcess
	}
	defer unix.Close(fd)
	if n, err := nsPID(host); err != nil || n != pid {
		return isolation.ErrNoProcess
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// readProc reads a host process's /proc: its command, start, CPU time and
// resident memory, and its parent's host pid.
func readProc(pid int, boot time.Time) (isolation.ProcessInfo, int, error) {
	var p isolation.ProcessInfo
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return p, 0, err
	}
	// The command in stat is parenthesised and may hold anything: the
	// fields are after its last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return p, 0, errors.New("bad stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 22 {
		return p, 0, errors.New("bad stat")
	}
	ppid, _ := strconv.Atoi(f[1])
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	start, _ := strconv.ParseUint(f[19], 10, 64)
	rss, _ := strconv.ParseUint(f[21], 10, 64)
	const ticks = 100 // USER_HZ
	p.CPUSeconds = float64(utime+stime) / ticks
	if !boot.IsZero() {
		p.StartedAt = boot.Add(time.Duration(start) * time.Second / ticks).UTC()
	}
	p.RSSBytes = rss * uint64(os.Getpagesize())
	if cmd, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && len(cmd) > 0 {
		p.Command = strings.TrimSpace(strings.ReplaceAll(string(bytes.TrimRight(cmd, "\x00")), "\x00", " "))
	} else {
		p.Command = "[" + string(stat[bytes.IndexByte(stat, '(')+1:i]) + "]"
	}
	return p, ppid, nil
}

// bootTime is when the host booted (zero if unknown).
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			if s, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}

// notSelf is pids without the daemon's: a thread of it that package
// runsc's startIn could not move back out of a v1 cgroup lists the daemon
// in a cgroup of a sandbox's.
func notSelf(pids []int) []int {
	self := os.Getpid()
	return slices.DeleteFunc(pids, func(p int) bool { return p == self })
}

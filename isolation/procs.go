package isolation

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
)

// ProcessInfo is one process of a sandbox, as its own pid namespace
// names it (docker top).
type ProcessInfo struct {
	PID, PPID  int
	Command    string
	StartedAt  time.Time // zero when the runtime does not say
	CPUSeconds float64
	RSSBytes   uint64 // 0 when the runtime does not say (runsc)
}

// ErrNoProcess is a pid no process of the sandbox has.
var ErrNoProcess = errors.New("no such process in the sandbox")

// Processes lists the sandbox's processes, its agent (pid 1) included.
func (s *Sandbox) Processes() ([]ProcessInfo, error) { return s.c.processes() }

// Signal sends sig to the sandbox's process pid (as the sandbox names it).
func (s *Sandbox) Signal(pid int, sig unix.Signal) error {
	if pid <= 0 {
		return ErrNoProcess
	}
	return s.c.signal(pid, sig)
}

// hostProcs are the host pids of a libcontainer sandbox's processes, by
// the pid the sandbox gives each.
func (c runcContainer) hostProcs() (map[int]int, error) {
	paths, err := c.cgroupPaths()
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

func (c runcContainer) processes() ([]ProcessInfo, error) {
	byInner, err := c.hostProcs()
	if err != nil {
		return nil, err
	}
	inner := make(map[int]int, len(byInner)) // host → sandbox pid
	for in, host := range byInner {
		inner[host] = in
	}
	boot := bootTime()
	var out []ProcessInfo
	for in, host := range byInner {
		p, hostPPID, err := readProc(host, boot)
		if err != nil {
			continue // it ended meanwhile
		}
		p.PID, p.PPID = in, inner[hostPPID]
		out = append(out, p)
	}
	sortByPID(out)
	return out, nil
}

func (c runcContainer) signal(pid int, sig unix.Signal) error {
	byInner, err := c.hostProcs()
	if err != nil {
		return err
	}
	host, ok := byInner[pid]
	if !ok {
		return ErrNoProcess
	}
	// A pidfd: the process cannot be swapped for a stranger in between.
	fd, err := unix.PidfdOpen(host, 0)
	if err != nil {
		return ErrNoProcess
	}
	defer unix.Close(fd)
	if n, err := nsPID(host); err != nil || n != pid {
		return ErrNoProcess
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// readProc reads a host process's /proc: its command, start, CPU time and
// resident memory, and its parent's host pid.
func readProc(pid int, boot time.Time) (ProcessInfo, int, error) {
	var p ProcessInfo
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

func sortByPID(ps []ProcessInfo) {
	slices.SortFunc(ps, func(a, b ProcessInfo) int { return a.PID - b.PID })
}

// processes asks runsc: gVisor's processes are not the host's. Its table,
// not its JSON: older runsc's JSON is the pids alone.
func (c *gvisorContainer) processes() ([]ProcessInfo, error) {
	out, err := c.rs.run(c.network, "ps", c.id)
	if err != nil {
		return nil, err
	}
	return parseRunscPS(string(out))
}

// parseRunscPS reads runsc ps's table: a header (UID PID PPID ... TIME
// CMD) and a line a process, the command last.
func parseRunscPS(out string) ([]ProcessInfo, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 {
		return nil, errors.New("runsc ps said nothing")
	}
	col := map[string]int{}
	header := strings.Fields(lines[0])
	for i, h := range header {
		col[h] = i
	}
	pidAt, ok1 := col["PID"]
	ppidAt, ok2 := col["PPID"]
	cmdAt, ok3 := col["CMD"]
	if !ok1 || !ok2 || !ok3 || cmdAt != len(header)-1 {
		return nil, fmt.Errorf("runsc ps: an unknown table: %q", lines[0])
	}
	timeAt, hasTime := col["TIME"]
	var ps []ProcessInfo
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < len(header) {
			continue
		}
		pid, err1 := strconv.Atoi(f[pidAt])
		ppid, err2 := strconv.Atoi(f[ppidAt])
		if err1 != nil || err2 != nil {
			continue
		}
		p := ProcessInfo{PID: pid, PPID: ppid, Command: strings.Join(f[cmdAt:], " ")}
		if hasTime {
			if d, err := time.ParseDuration(f[timeAt]); err == nil {
				p.CPUSeconds = d.Seconds()
			}
		}
		ps = append(ps, p)
	}
	sortByPID(ps)
	return ps, nil
}

func (c *gvisorContainer) signal(pid int, sig unix.Signal) error {
	ps, err := c.processes()
	if err != nil {
		return err
	}
	found := false
	for _, p := range ps {
		found = found || p.PID == pid
	}
	if !found {
		return ErrNoProcess
	}
	_, err = c.rs.run(c.network, "kill", "--pid", strconv.Itoa(pid), c.id, strconv.Itoa(int(sig)))
	return err
}

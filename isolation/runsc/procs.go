package runsc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/isolation"
)

// Processes asks runsc: gVisor's processes are not the host's. Its table,
// not its JSON: older runsc's JSON is the pids alone.
func (c *gvisorContainer) Processes() ([]isolation.ProcessInfo, error) {
	out, err := c.rs.run(c.network, "ps", c.id)
	if err != nil {
		return nil, err
	}
	return parseRunscPS(string(out))
}

// parseRunscPS reads runsc ps's table: a header (UID PID PPID ... TIME
// CMD) and a line a process, the command last.
func parseRunscPS(out string) ([]isolation.ProcessInfo, error) {
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
	var ps []isolation.ProcessInfo
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
		p := isolation.ProcessInfo{PID: pid, PPID: ppid, Command: strings.Join(f[cmdAt:], " ")}
		if hasTime {
			if d, err := time.ParseDuration(f[timeAt]); err == nil {
				p.CPUSeconds = d.Seconds()
			}
		}
		ps = append(ps, p)
	}
	isolation.SortByPID(ps)
	return ps, nil
}

func (c *gvisorContainer) Signal(pid int, sig unix.Signal) error {
	ps, err := c.Processes()
	if err != nil {
		return err
	}
	found := false
	for _, p := range ps {
		found = found || p.PID == pid
	}
	if !found {
		return isolation.ErrNoProcess
	}
	_, err = c.rs.run(c.network, "kill", "--pid", strconv.Itoa(pid), c.id, strconv.Itoa(int(sig)))
	return err
}

package isolation

import (
	"errors"
	"slices"
	"time"

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
func (s *Sandbox) Processes() ([]ProcessInfo, error) { return s.c.Processes() }

// Signal sends sig to the sandbox's process pid (as the sandbox names it).
func (s *Sandbox) Signal(pid int, sig unix.Signal) error {
	if pid <= 0 {
		return ErrNoProcess
	}
	return s.c.Signal(pid, sig)
}

// SortByPID sorts a process list by the sandbox's pids.
func SortByPID(ps []ProcessInfo) {
	slices.SortFunc(ps, func(a, b ProcessInfo) int { return a.PID - b.PID })
}

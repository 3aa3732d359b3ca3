package isolation

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NetNS opens the sandbox's network namespace (its init's), for the
// daemon to plumb a network into. The caller closes it.
func (s *Sandbox) NetNS() (*os.File, error) {
	st, err := s.c.State()
	if err != nil {
		return nil, err
	}
	pid := st.InitProcessPid
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s network namespace: %w", s.id, err)
	}
	// The file is the init's if the pid still is: it is, if the process of
	// that pid started when the init did.
	if start, err := startTime(pid); err != nil || start != st.InitProcessStartTime {
		f.Close()
		return nil, fmt.Errorf("sandbox %s: its init exited", s.id)
	}
	return f, nil
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks after boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) may hold spaces and parentheses: fields count
	// from after its last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

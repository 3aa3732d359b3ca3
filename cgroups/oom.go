package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OOMKills counts the processes the kernel killed for memory in sandbox
// id's cgroup: memory.events on v2, memory.oom_control on v1. It reads
// the file directly (no watcher per sandbox): the daemon asks only when a
// sandbox or an execution died.
func (t *Tree) OOMKills(id string) (uint64, error) {
	dirs, err := t.dirs()
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		for _, f := range []string{"memory.events", "memory.oom_control"} {
			n, err := readKey(filepath.Join(d, id, f), "oom_kill")
			if err == nil {
				return n, nil
			}
			if !errors.Is(err, os.ErrNotExist) {
				return 0, err
			}
		}
	}
	return 0, os.ErrNotExist
}

// readKey reads the value of key in a flat-keyed cgroup file ("key N"
// lines).
func readKey(path, key string) (uint64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	return parseKey(b, key)
}

// parseKey is the value of key in a flat-keyed file's contents b.
func parseKey(b []byte, key string) (uint64, error) {
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, os.ErrNotExist
}

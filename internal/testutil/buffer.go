package testutil

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine (a process's output, a
// daemon's log) writes while a test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines counts the lines that have sub.
func (s *Buffer) Lines(sub string) int {
	n := 0
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

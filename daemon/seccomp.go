package daemon

import (
	"log/slog"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/seccomp"
)

// deniedLog logs the system calls sandboxes were refused, with the session
// id, at most burst lines per session a minute: code in a loop of refused
// calls must not flood the daemon's log. What is left out is counted and
// said in the next line.
type deniedLog struct {
	log   *slog.Logger
	count func(syscall string)
	burst int

	mu       sync.Mutex
	sessions map[string]*deniedWindow
}

type deniedWindow struct {
	start   time.Time
	logged  int
	dropped int
}

func newDeniedLog(log *slog.Logger, count func(string)) *deniedLog {
	return &deniedLog{log: log, count: count, burst: 20, sessions: map[string]*deniedWindow{}}
}

func (l *deniedLog) report(v seccomp.Violation) {
	l.count(v.Syscall)
	now := time.Now()
	l.mu.Lock()
	w := l.sessions[v.Sandbox]
	if w == nil || now.Sub(w.start) > time.Minute {
		if w != nil && w.dropped > 0 {
			defer l.log.Warn("seccomp refused more system calls than were logged", "session", v.Sandbox, "not_logged", w.dropped)
		}
		w = &deniedWindow{start: now}
		l.sessions[v.Sandbox] = w
	}
	if w.logged >= l.burst {
		w.dropped++
		l.mu.Unlock()
		return
	}
	w.logged++
	l.mu.Unlock()
	l.log.Warn("seccomp refused a system call", "session", v.Sandbox, "syscall", v.Syscall, "pid", v.Pid, "comm", v.Comm)
}

// forget drops a session's window when the session goes.
func (l *deniedLog) forget(id string) {
	l.mu.Lock()
	delete(l.sessions, id)
	l.mu.Unlock()
}

// Package process owns a session's processes as the API serves them: the
// background processes it starts (exec --detach), their output files, the
// list of a sandbox's processes and their signals. Which session a caller
// reaches, and the rules for a command's environment, stay the daemon's
// (Options).
package process

import "sync"

// Book is what a session's daemon knows of the background processes it
// started: their pids and, once ended, their exit codes. A process that
// outlives the daemon is the next one's to see in the sandbox's list. The
// zero Book is empty and ready.
type Book struct {
	mu    sync.Mutex
	procs map[int]*entry
	// attached are the processes whose streams this daemon holds, in the
	// order they started.
	attached []*attached
}

// entry is one background process; exit is set once it ended.
type entry struct {
	exit *int
}

func (b *Book) add(pid int) *entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.procs == nil {
		b.procs = map[int]*entry{}
	}
	e := &entry{}
	b.procs[pid] = e
	return e
}

func (b *Book) ended(e *entry, code int) {
	b.mu.Lock()
	e.exit = &code
	b.mu.Unlock()
}

// lookup says whether this daemon started pid and, if it ended, how.
func (b *Book) lookup(pid int) (started bool, exit *int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.procs[pid]
	if e == nil {
		return false, nil
	}
	return true, e.exit
}

// attach keeps a, unless the session runs maxAttached already; ended ones
// beyond keepEnded go, the oldest first.
func (b *Book) attach(a *attached) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	running, ended := 0, 0
	for _, x := range b.attached {
		if x.running() {
			running++
		} else {
			ended++
		}
	}
	if running >= maxAttached {
		return false
	}
	for i := 0; ended >= keepEnded && i < len(b.attached); {
		if !b.attached[i].running() {
			b.attached = append(b.attached[:i], b.attached[i+1:]...)
			ended--
			continue
		}
		i++
	}
	b.attached = append(b.attached, a)
	return true
}

// findAttached is the attached process pid, or the last one started with
// tag (pid 0): nil if none.
func (b *Book) findAttached(pid int, tag string) *attached {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.attached) - 1; i >= 0; i-- {
		a := b.attached[i]
		if (pid != 0 && a.info.PID == pid) || (pid == 0 && tag != "" && a.info.Tag == tag) {
			return a
		}
	}
	return nil
}

// attachedList are the attached processes, oldest first.
func (b *Book) attachedList() []*attached {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*attached(nil), b.attached...)
}

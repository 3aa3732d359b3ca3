package store

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCorrupt is what a damaged database file answers to errors.Is: the
// daemon must not serve it (Recover salvages it). A *CorruptError says
// which file and what is wrong.
var ErrCorrupt = errors.New("database corrupted")

// ErrLocked is what errors.Is finds when another process (a running
// daemon) holds the database's lock past Options.Timeout.
var ErrLocked = errors.New("database locked")

// CorruptError is a database file found damaged: at open, its pages,
// meta pages, freelist or records failed a check.
type CorruptError struct {
	Path string
	// Reason is the first problem found, one line.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the database %s is corrupted: %s", e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// maxReason bounds a reason: bbolt's check messages carry whole page
// stacks and keys, and the reason ends up in one sentence on a terminal.
const maxReason = 200

// corrupt is the CorruptError of path for err, its message made one
// short line.
func corrupt(path string, err error) *CorruptError {
	r := strings.Join(strings.Fields(err.Error()), " ")
	if len(r) > maxReason {
		r = r[:maxReason] + "…"
	}
	return &CorruptError{Path: path, Reason: r}
}

// lockedError says another process holds the lock of the database at
// its path; errors.Is(err, ErrLocked) is true.
type lockedError string

func (e lockedError) Error() string {
	return fmt.Sprintf("the database %s is locked: is another sandboxd running on this data dir?", string(e))
}

func (e lockedError) Is(target error) bool { return target == ErrLocked }

package store

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockRetry is how often a held lock is tried again (bbolt's own pace).
const lockRetry = 50 * time.Millisecond

// flock takes the lock bbolt takes on the database file (flock(2):
// shared to read, exclusive to write), trying again until timeout. It is
// the same lock, so a daemon's bbolt and the store's own reading of the
// file (the check at open, Recover) exclude each other.
func flock(f *os.File, path string, exclusive bool, timeout time.Duration) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	start := time.Now()
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK {
			return fmt.Errorf("lock the database %s: %w", path, err)
		}
		if time.Since(start) >= timeout {
			return lockedError(path)
		}
		time.Sleep(lockRetry)
	}
}

// Package durable makes what the daemon writes outlive a crash of it or
// of the host: a folder's entries flushed, a rename made durable.
package durable

import (
	"os"
	"path/filepath"
)

// SyncDir flushes folder dir's entries (names made, renamed or removed
// in it).
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// RenameDir renames the complete folder tmp to dir, durably: tmp's
// entries first, then the rename in dir's parent.
func RenameDir(tmp, dir string) error {
	if err := SyncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(dir))
}

package store

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// LastGoodPath is where Open keeps the last-good copy of the database at
// path: the file as it was at the last start that found it sound. It is
// what an operator restores, and what Recover falls back to when the
// database cannot be read at all.
func LastGoodPath(path string) string { return path + ".last-good" }

// saveLastGood copies the database, as one read transaction sees it, to
// its last-good copy: a temporary file, synced, renamed over the old copy
// (the old copy stays whole until the new one is). Its cost is one
// sequential copy of the file per daemon start. Only a database that
// passed the check at open is copied: a damaged one never replaces the
// copy that could bring it back.
func (s *Store) saveLastGood(path string) error {
	tmp := lastGoodTemp(path)
	err := s.db.View(func(tx *bolt.Tx) error {
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = tx.WriteTo(f)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err == nil {
		err = renameDurably(tmp, LastGoodPath(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write the last-good copy of %s: %w", path, err)
	}
	return nil
}

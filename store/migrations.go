package store

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// migration brings the schema from version N to N+1, inside the one
// transaction that also records the new version.
type migration func(tx *bolt.Tx) error

// migrations[i] takes version i to version i+1. Append only: a released
// migration never changes.
var migrations = []migration{
	// 0 -> 1: the initial buckets.
	func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketSessions, bucketExecutions} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	},
	// 1 -> 2: templates.
	func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketTemplates)
		return err
	},
}

// SchemaVersion is the version this daemon writes.
var SchemaVersion = len(migrations)

func (s *Store) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		v, err := version(tx)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(migrations) {
			return fmt.Errorf("the database has schema version %d, newer than this sandboxd knows (%d): upgrade sandboxd", v, len(migrations))
		}
		for ; v < len(migrations); v++ {
			if err := migrations[v](tx); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte(strconv.Itoa(v)))
	})
}

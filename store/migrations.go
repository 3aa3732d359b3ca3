package store

import (
	"bytes"
	"encoding/json"
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
	// 2 -> 3: templates per owner (TemplateKey).
	templatesPerOwner,
	// 3 -> 4: volumes.
	func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketVolumes)
		return err
	},
	// 4 -> 5: snapshots.
	func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketSnapshots)
		return err
	},
}

// templatesPerOwner moves every template of an owner but root from its
// name, when names were global, to its TemplateKey ("uid/name"), and has
// the sessions that named it name its key: the name was the one template
// of that name, so the move is exact. Values are rewritten only in the
// field that changes, so that no field of a record is lost.
func templatesPerOwner(tx *bolt.Tx) error {
	tb := tx.Bucket(bucketTemplates)
	moved := map[string]string{} // old key -> new key
	vals := map[string][]byte{}  // old key -> the record
	if err := tb.ForEach(func(k, v []byte) error {
		var t Template
		if v == nil || json.Unmarshal(v, &t) != nil {
			return nil // checkSchema's to report, not the migration's
		}
		if nk := TemplateKey(t.OwnerUID, t.Name); nk != string(k) && string(k) == t.Name {
			moved[string(k)], vals[string(k)] = nk, bytes.Clone(v)
		}
		return nil
	}); err != nil {
		return err
	}
	// Changed after the walk: bbolt's cursors do not survive a write.
	for old, nk := range moved {
		if err := tb.Put([]byte(nk), vals[old]); err != nil {
			return err
		}
		if err := tb.Delete([]byte(old)); err != nil {
			return err
		}
	}
	if len(moved) == 0 {
		return nil
	}
	sb := tx.Bucket(bucketSessions)
	renamed := map[string][]byte{}
	if err := sb.ForEach(func(k, v []byte) error {
		var r map[string]json.RawMessage
		if v == nil || json.Unmarshal(v, &r) != nil {
			return nil
		}
		var name string
		if json.Unmarshal(r["template"], &name) != nil || moved[name] == "" {
			return nil
		}
		r["template"], _ = json.Marshal(moved[name])
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		renamed[string(k)] = b
		return nil
	}); err != nil {
		return err
	}
	for k, v := range renamed {
		if err := sb.Put([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion is the version this daemon writes.
var SchemaVersion = len(migrations)

func (s *Store) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		v, err := version(tx)
		if err != nil {
			return corrupt(s.db.Path(), fmt.Errorf("read schema version: %w", err))
		}
		if v < 0 {
			return &CorruptError{Path: s.db.Path(), Reason: fmt.Sprintf("its schema version is %d", v)}
		}
		if v > len(migrations) {
			return newerSchema(v)
		}
		for ; v < len(migrations); v++ {
			if err := migrations[v](tx); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte(strconv.Itoa(v)))
	})
}

// newerSchema is the schema version of a database a newer sandboxd
// wrote; as an error, it says to upgrade.
type newerSchema int

func (v newerSchema) Error() string {
	return fmt.Sprintf("the database has schema version %d, newer than this sandboxd knows (%d): upgrade sandboxd", int(v), len(migrations))
}

// schemaBuckets are the schema's top-level buckets and the version that
// brought each (TestSchemaBuckets holds them to the migrations).
var schemaBuckets = []struct {
	name  []byte
	since int
}{{bucketMeta, 1}, {bucketSessions, 1}, {bucketExecutions, 1}, {bucketTemplates, 2}, {bucketVolumes, 4}, {bucketSnapshots, 5}}

// checkSchema finds, read-only, what would make Open's migration fail or
// leave the schema incomplete in a database whose pages are sound: a
// version that is no number, a bucket of its version missing, a value
// where a migration would make a bucket. A newer version is not damage:
// its error says to upgrade.
func checkSchema(tx *bolt.Tx) error {
	v, err := version(tx)
	if err != nil {
		return fmt.Errorf("its schema version is no number: %w", err)
	}
	if v < 0 {
		return fmt.Errorf("its schema version is %d", v)
	}
	if v > len(migrations) {
		return newerSchema(v)
	}
	for _, b := range schemaBuckets {
		if tx.Bucket(b.name) != nil {
			continue
		}
		if v >= b.since {
			return fmt.Errorf("its %s bucket is missing", b.name)
		}
		if k, _ := tx.Cursor().Seek(b.name); string(k) == string(b.name) {
			return fmt.Errorf("its %s is a value, not a bucket", b.name)
		}
	}
	if m := tx.Bucket(bucketMeta); m != nil && m.Bucket(keyVersion) != nil {
		return fmt.Errorf("its schema version is a bucket")
	}
	return checkRecords(tx)
}

// checkRecords checks what the daemon reads at every start: each session
// and template decodes (a few hundred records; the executions, many more
// and read one session at a time, are left to Recover), and the
// executions bucket holds one bucket per session.
func checkRecords(tx *bolt.Tx) error {
	for _, b := range []struct {
		name []byte
		rec  func() any
	}{{bucketSessions, func() any { return new(Record) }}, {bucketTemplates, func() any { return new(Template) }}, {bucketVolumes, func() any { return new(Volume) }}, {bucketSnapshots, func() any { return new(Snapshot) }}} {
		bk := tx.Bucket(b.name)
		if bk == nil {
			continue // a bucket an older schema lacks
		}
		if err := bk.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("its %s bucket holds a bucket %q", b.name, k)
			}
			if err := json.Unmarshal(v, b.rec()); err != nil {
				return fmt.Errorf("its %s record %q is not valid: %w", b.name, k, err)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if all := tx.Bucket(bucketExecutions); all != nil {
		return all.ForEach(func(k, v []byte) error {
			if v != nil {
				return fmt.Errorf("its executions bucket holds a value %q", k)
			}
			return nil
		})
	}
	return nil
}

package store

import (
	"encoding/json"
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
)

// Snapshot is a session's state kept beyond it: the session's record as
// it was (its settings: template, limits, env, network policy, labels,
// runtime), and in the folder of its id the files it held.
type Snapshot struct {
	// SnapshotID is its key and its folder's name (a session record's
	// key is "id": the two are told apart by the field a salvage finds).
	SnapshotID string    `json:"snapshot_id"`
	Name       string    `json:"name,omitempty"`
	OwnerUID   uint32    `json:"owner_uid"`
	CreatedAt  time.Time `json:"created_at"`
	// SizeBytes is what its folder holds.
	SizeBytes int64 `json:"size_bytes"`
	// Memory is set when it holds the interpreter's memory too (runsc).
	Memory bool `json:"memory,omitempty"`
	// Fork marks one taken for a fork: no one's to list, removed once the
	// fork's sessions are made, or at the daemon's next start.
	Fork bool `json:"fork,omitempty"`
	// Session is the source session's record when it was taken.
	Session Record `json:"session"`
}

// PutSnapshot writes a snapshot, its folder already complete: once it is
// in the store it is whole.
func (s *Store) PutSnapshot(v *Snapshot) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSnapshots).Put([]byte(v.SnapshotID), b)
	})
}

// Snapshots lists the snapshots, in id order.
func (s *Store) Snapshots() ([]*Snapshot, error) { return list[Snapshot](s, bucketSnapshots) }

// GetSnapshot is snapshot id (errdefs.ErrNotFound if none).
func (s *Store) GetSnapshot(id string) (*Snapshot, error) {
	var out *Snapshot
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSnapshots).Get([]byte(id))
		if b == nil {
			return errdefs.ErrNotFound
		}
		out = new(Snapshot)
		return json.Unmarshal(b, out)
	})
	return out, err
}

// DeleteSnapshot removes snapshot id; removing a missing one is no error.
func (s *Store) DeleteSnapshot(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSnapshots).Delete([]byte(id))
	})
}

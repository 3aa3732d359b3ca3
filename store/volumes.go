package store

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
)

// Volume is a volume as it was made: named per owner, its files in the
// folder of its own id (the daemon's layout), size_mb its quota.
type Volume struct {
	// VolumeID names its folder: a name may be made again after a
	// delete, while the old folder is still being removed.
	VolumeID  string    `json:"volume_id"`
	Name      string    `json:"name"`
	SizeMB    int64     `json:"size_mb"`
	OwnerUID  uint32    `json:"owner_uid"`
	CreatedAt time.Time `json:"created_at"`
	// SharedWith are the users whose sessions may mount it too.
	SharedWith []uint32 `json:"shared_with,omitempty"`
}

// VolumeKey is a volume's key in its bucket: "uid/name" (names hold no
// '/').
func VolumeKey(owner uint32, name string) string {
	return strconv.FormatUint(uint64(owner), 10) + "/" + name
}

// CreateVolume writes v unless its owner has a volume of its name
// (errdefs.ErrAlreadyExists).
func (s *Store) CreateVolume(v *Volume) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketVolumes)
		k := []byte(VolumeKey(v.OwnerUID, v.Name))
		if bk.Get(k) != nil {
			return errdefs.ErrAlreadyExists
		}
		return bk.Put(k, b)
	})
}

// Volumes lists the volumes, in key order.
func (s *Store) Volumes() ([]*Volume, error) { return list[Volume](s, bucketVolumes) }

// DeleteVolume removes owner's volume name; removing a missing one is no
// error.
func (s *Store) DeleteVolume(owner uint32, name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketVolumes).Delete([]byte(VolumeKey(owner, name)))
	})
}

// UpdateVolume rewrites owner's volume name with change applied, in one
// transaction (errdefs.ErrNotFound if it is gone); change may refuse.
func (s *Store) UpdateVolume(owner uint32, name string, change func(*Volume) error) (*Volume, error) {
	var out Volume
	err := s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketVolumes)
		k := []byte(VolumeKey(owner, name))
		b := bk.Get(k)
		if b == nil {
			return errdefs.ErrNotFound
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return err
		}
		if err := change(&out); err != nil {
			return err
		}
		nb, err := json.Marshal(&out)
		if err != nil {
			return err
		}
		return bk.Put(k, nb)
	})
	return &out, err
}

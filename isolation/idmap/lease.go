package idmap

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxd/sandboxd/isolation/lease"
)

// Several daemons can run on one host, each with its own data dir, and
// each must give its sandboxes host ids no other daemon's sandboxes use:
// two sandboxes of different daemons sharing a host uid could signal or
// trace each other. So every daemon leases its range in the lease folder
// all daemons share (package lease: one file per instance, under a lock).

// LeaseRequest is what a daemon asks of the lease folder.
type LeaseRequest struct {
	// Dir is the host-wide lease folder.
	Dir string
	// Instance is the daemon's instance id; DataDir its data dir, whose
	// InstanceFile holds that id while the lease is live.
	Instance string
	DataDir  string
	// Want is the range the daemon is configured with.
	Want Range
	// Move, when Want overlaps another daemon's range, takes the first
	// free range of the same size after it instead of failing.
	Move bool
}

// InstanceFile is the file of a data dir that names its daemon instance.
const InstanceFile = lease.InstanceFile

// idLease is a lease file's content.
type idLease struct {
	lease.Owner
	Base   uint32 `json:"base"`
	Blocks int    `json:"blocks"`
}

func (l idLease) rng() Range { return Range{Base: l.Base, Blocks: l.Blocks} }

// end is one past the range's last id.
func (r Range) end() uint64 { return uint64(r.Base) + uint64(r.Blocks)*BlockSize }

// Overlaps reports whether r and o share an id.
func (r Range) Overlaps(o Range) bool {
	return uint64(r.Base) < o.end() && uint64(o.Base) < r.end()
}

// Lease takes a range of host ids for the daemon and returns it: the one
// wanted, or (with Move) the first free one after it. A daemon that
// leased before gets its earlier range back when it still fits.
func Lease(req LeaseRequest) (Range, error) {
	if err := req.Want.Validate(); err != nil {
		return Range{}, err
	}
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return Range{}, fmt.Errorf("id range leases: %w", err)
	}
	unlock, err := lease.LockDir(req.Dir)
	if err != nil {
		return Range{}, err
	}
	defer unlock()
	others, mine, err := lease.Read[idLease](req.Dir, req.Instance, nil)
	if err != nil {
		return Range{}, err
	}
	free := func(r Range) (idLease, bool) {
		for _, o := range others {
			if r.Overlaps(o.rng()) {
				return o, false
			}
		}
		return idLease{}, true
	}
	got := req.Want
	// A moved daemon keeps the range it moved to, so its sessions keep
	// their ids across restarts.
	if mine != nil && req.Move && mine.Blocks == req.Want.Blocks && mine.rng().Validate() == nil {
		if _, ok := free(mine.rng()); ok {
			got = mine.rng()
		}
	}
	if o, ok := free(got); !ok {
		if !req.Move {
			return Range{}, fmt.Errorf("the user-namespace id range %d-%d overlaps the range of the sandboxd whose data dir is %s: give this daemon another [userns] id_base", got.Base, got.end()-1, o.DataDir)
		}
		found := false
		for base := uint64(got.Base); base+uint64(got.Blocks)*BlockSize-1 <= MaxID; base += uint64(got.Blocks) * BlockSize {
			r := Range{Base: uint32(base), Blocks: got.Blocks}
			if _, ok := free(r); ok {
				got, found = r, true
				break
			}
		}
		if !found {
			return Range{}, fmt.Errorf("no user-namespace id range of %d blocks is free on this host: lower [userns] blocks", got.Blocks)
		}
	}
	b, err := json.Marshal(idLease{lease.Owner{Instance: req.Instance, DataDir: req.DataDir}, got.Base, got.Blocks})
	if err != nil {
		return Range{}, err
	}
	tmp := filepath.Join(req.Dir, "."+req.Instance+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return Range{}, err
	}
	if err := os.Rename(tmp, lease.Path(req.Dir, req.Instance)); err != nil {
		return Range{}, err
	}
	return got, nil
}

// ReleaseLease gives the daemon's id range back; for a daemon that holds
// no ids any more, no session being left.
func ReleaseLease(dir, instance string) error { return lease.Release(dir, instance) }

package idmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Several daemons can run on one host (a packaged one, a user's own,
// tests in parallel), each with its own data dir, and each must give its
// sandboxes host ids no other daemon's sandboxes use: two sandboxes of
// different daemons sharing a host uid could signal or trace each other.
// So every daemon leases its range in a folder all daemons share (the
// lease folder, one file per daemon instance), under a lock. A lease lives
// as long as its daemon's data dir still names that instance: a daemon
// that stopped with sessions left keeps its range; one whose data dir is
// gone leaves a stale lease the next daemon removes.

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
const InstanceFile = "instance"

// lease is a lease file's content.
type lease struct {
	LeaseOwner
	Base   uint32 `json:"base"`
	Blocks int    `json:"blocks"`
}

func (l lease) rng() Range { return Range{Base: l.Base, Blocks: l.Blocks} }

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
	unlock, err := LockDir(req.Dir)
	if err != nil {
		return Range{}, err
	}
	defer unlock()
	others, mine, err := ReadLeases[lease](req.Dir, req.Instance, nil)
	if err != nil {
		return Range{}, err
	}
	free := func(r Range) (lease, bool) {
		for _, o := range others {
			if r.Overlaps(o.rng()) {
				return o, false
			}
		}
		return lease{}, true
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
	b, err := json.Marshal(lease{LeaseOwner{req.Instance, req.DataDir}, got.Base, got.Blocks})
	if err != nil {
		return Range{}, err
	}
	tmp := filepath.Join(req.Dir, "."+req.Instance+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return Range{}, err
	}
	if err := os.Rename(tmp, leasePath(req.Dir, req.Instance)); err != nil {
		return Range{}, err
	}
	return got, nil
}

// ReleaseLease gives the daemon's lease of lease folder dir back: its id
// range here, its subnet in package network; for a daemon that holds no
// ids (or addresses) any more, no session being left.
func ReleaseLease(dir, instance string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // no folder, no lease (a host whose /run was cleared)
	}
	unlock, err := LockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(leasePath(dir, instance)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func leasePath(dir, instance string) string { return filepath.Join(dir, instance+".json") }

// LeaseOwner is what every lease file of a lease folder names: the daemon
// instance holding it and that daemon's data dir (which shows whether it
// still lives). The id ranges here and the subnets of package network
// are such leases.
type LeaseOwner struct {
	Instance string `json:"instance"`
	DataDir  string `json:"data_dir"`
}

// Owner is the lease's owner, for ReadLeases.
func (o LeaseOwner) Owner() LeaseOwner { return o }

// Leased is a lease file's JSON: its LeaseOwner and what it holds.
type Leased interface{ Owner() LeaseOwner }

// ReadLeases reads the lease files of dir (its lock held): the live
// leases of other daemons, and the instance's own. Stale ones (their
// daemon's data dir names another instance, or none) are removed, and so
// are files this code did not write, or whose lease valid (if not nil)
// refuses.
func ReadLeases[T Leased](dir, instance string, valid func(T) bool) (others []T, mine *T, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		var l T
		if json.Unmarshal(b, &l) != nil || l.Owner().Instance != name || valid != nil && !valid(l) {
			_ = os.Remove(path) // not a lease this code wrote
			continue
		}
		if name == instance {
			mine = &l
			continue
		}
		if o := l.Owner(); !Live(o.DataDir, o.Instance) {
			_ = os.Remove(path)
			continue
		}
		others = append(others, l)
	}
	return others, mine, nil
}

// Live reports whether the daemon instance of a lease still has its data
// dir: its lease holds.
func Live(dataDir, instance string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, InstanceFile))
	return err == nil && strings.TrimSpace(string(b)) == instance
}

// LockDir takes a lease folder's lock (flock), for one read-and-write.
func LockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("id range leases: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("id range leases: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Package lease is the lease folder several daemons on one host share
// (a packaged one, a user's own, tests in parallel): each daemon instance
// holds one file there per thing it must not share with another (its
// user-namespace id range, package idmap; its subnet, package network),
// read and written under one lock. A lease lives as long as its daemon's
// data dir still names that instance: a daemon that stopped with sessions
// left keeps it; one whose data dir is gone leaves a stale lease the next
// daemon removes. It is a leaf: both owners import it, neither the other.
package lease

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// InstanceFile is the file of a data dir that names its daemon instance.
const InstanceFile = "instance"

// Release gives the daemon's lease of lease folder dir back (an id range,
// a subnet), for a daemon that holds none of it any more.
func Release(dir, instance string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // no folder, no lease (a host whose /run was cleared)
	}
	unlock, err := LockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(Path(dir, instance)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Path is the lease file of a daemon instance in lease folder dir.
func Path(dir, instance string) string { return filepath.Join(dir, instance+".json") }

// Owner is what every lease file of a lease folder names: the daemon
// instance holding it and that daemon's data dir (which shows whether it
// still lives).
type Owner struct {
	Instance string `json:"instance"`
	DataDir  string `json:"data_dir"`
}

// LeaseOwner is the lease's owner, for Read.
func (o Owner) LeaseOwner() Owner { return o }

// Leased is a lease file's JSON: its Owner and what it holds.
type Leased interface{ LeaseOwner() Owner }

// Read reads the lease files of dir (its lock held): the live
// leases of other daemons, and the instance's own. Stale ones (their
// daemon's data dir names another instance, or none) are removed, and so
// are files this code did not write, or whose lease valid (if not nil)
// refuses.
func Read[T Leased](dir, instance string, valid func(T) bool) (others []T, mine *T, err error) {
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
		if json.Unmarshal(b, &l) != nil || l.LeaseOwner().Instance != name || valid != nil && !valid(l) {
			_ = os.Remove(path) // not a lease this code wrote
			continue
		}
		if name == instance {
			mine = &l
			continue
		}
		if o := l.LeaseOwner(); !Live(o.DataDir, o.Instance) {
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
		return nil, fmt.Errorf("leases: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("leases: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Package disk admits session disks on the data dir: a ledger of the disk
// promised to every session and pooled sandbox, the arithmetic of what the
// host can still promise (budget.go), and each user's share of it. It is
// the one owner of those promises: the daemon asks it before it makes a
// session's filesystem and tells it when one is removed; what it needs of
// the host's disk comes in as a Probe, what it needs of the daemon (the
// pools giving back disk, the sessions to reconcile) as arguments.
package disk

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// RetryAfter is the Retry-After of a create refused for disk space:
// space comes back when sessions are deleted, which is a person's or a
// client's decision, not a matter of milliseconds.
const RetryAfter = 30 * time.Second

// budget is the arithmetic of disk admission, apart from where its
// numbers come from so that it can be tested as a table. Session images
// are sparse: each promises its disk_mb but takes from the host only what
// is written in it. Promising more than the host has is how a full host
// disk used to abort the journals of every session image on it (issue 14).
type budget struct {
	// free is what the data dir's filesystem has left (statfs f_bavail).
	free int64
	// outstanding is what live disks may still take: for each, its size
	// less what its image already holds.
	outstanding int64
	// floor is what must stay free whatever the promises
	// (data_dir_min_free_mb).
	floor int64
	// overcommit is how many bytes of sparse disk may be promised per
	// free byte above the floor (disk_overcommit; 1: none).
	overcommit float64
	// promised is the whole size of every live disk: what the data dir's
	// promises hold, written or not (see capacity).
	promised int64
}

// capacity is what the data dir can promise in all: what is promised
// already and what may still be. Writes into a disk do not move it (the
// free space they take was promised), so a user's share of it stays put
// while sessions fill their disks.
func (b budget) capacity() int64 {
	return satAdd(b.promisable(), b.promised)
}

// share is what one user's disks may hold together: fraction
// (disk_share_per_uid) of the capacity.
func (b budget) share(fraction float64) int64 {
	s := float64(b.capacity()) * fraction
	if s >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(s)
}

// fitsShare reports whether a new disk of want bytes keeps a user who
// holds held within their share.
func (b budget) fitsShare(held, want int64, fraction float64) bool {
	return satAdd(held, want) <= b.share(fraction)
}

// shareRefusal is the 429 of a disk past its user's share, in one
// sentence saying the share, what the user holds and how to free it.
func (b budget) shareRefusal(uid uint32, held, want int64, fraction float64) error {
	return api.WithRetryAfter(shareError{api.Errorf(errdefs.ErrResourceExhausted,
		"uid %d's sessions hold %d MiB of disk, and a %d MiB disk does not fit in its share of %d MiB (disk_share_per_uid %g of the %d MiB the data dir can promise): delete sessions of yours or ask for less disk_mb",
		uid, mib(held), mib(want), mib(b.share(fraction)), fraction, mib(b.capacity()))}, RetryAfter)
}

// shareError marks a refusal for the user's share, not for the data dir's
// space: the pools giving back their surplus would not make it fit.
type shareError struct{ error }

func (e shareError) Unwrap() error { return e.error }

// IsShareRefusal reports whether err is a refusal for the user's share.
func IsShareRefusal(err error) bool {
	var s shareError
	return errors.As(err, &s)
}

// satAdd is a+b for sizes, at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// promisable is how much more disk may be promised: the free space above
// the floor, times the overcommit, less what is promised already. It is
// never below 0.
func (b budget) promisable() int64 {
	room := float64(b.free-b.floor)*b.overcommit - float64(b.outstanding)
	if room <= 0 {
		return 0
	}
	if room >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(room)
}

// fits reports whether a new disk of want bytes may be promised. A disk
// that takes no promise (want 0: a plain folder, not sparse, not sized)
// still needs the data dir above its floor.
func (b budget) fits(want int64) bool {
	if b.free < b.floor {
		return false
	}
	return want <= b.promisable()
}

// refusal is the 429 of a disk that does not fit, in one sentence saying
// what is free and what to do.
func (b budget) refusal(want int64) error {
	var err error
	if want == 0 {
		err = api.Errorf(errdefs.ErrResourceExhausted,
			"the data dir has %d MiB free, under its %d MiB floor (data_dir_min_free_mb): delete sessions or free space on the host",
			mib(b.free), mib(b.floor))
	} else {
		err = api.Errorf(errdefs.ErrResourceExhausted,
			"the data dir has %d MiB free of which %d MiB can be promised: a %d MiB disk does not fit above the %d MiB floor (data_dir_min_free_mb); delete sessions or ask for less disk_mb",
			mib(b.free), mib(b.promisable()), mib(want), mib(b.floor))
	}
	return api.WithRetryAfter(err, RetryAfter)
}

// mib is n bytes in whole MiB, rounded down (never overstating what is
// free), and 0 below 0.
func mib(n int64) int64 { return max(n, 0) >> 20 }

// String is the budget for logs.
func (b budget) String() string {
	return fmt.Sprintf("free %d MiB, outstanding %d MiB of %d MiB promised, floor %d MiB, overcommit %g", mib(b.free), mib(b.outstanding), mib(b.promised), mib(b.floor), b.overcommit)
}

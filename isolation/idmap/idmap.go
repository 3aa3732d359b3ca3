// Package idmap hands out the host ids of user namespaces: the daemon owns
// one range of host uids and gids (as Docker's userns-remap owns a subuid
// range) and gives each session a block of it of its own, so that root, or
// any user, inside one sandbox is a different unprivileged nobody on the
// host than inside any other.
package idmap

import (
	"fmt"
	"sync"

	"github.com/containerd/errdefs"
)

// BlockSize is how many ids a sandbox sees: the usual 65536 of a Linux
// system, so that files of any ordinary owner can exist inside.
const BlockSize = 65536

// MaxID is the last id a range may use: (uid_t)-1 means "no id" and -2 is
// taken by nfsnobody on some systems.
const MaxID = 1<<32 - 3

// Range is the host ids the daemon owns: Blocks blocks of BlockSize ids
// from Base.
type Range struct {
	Base   uint32
	Blocks int
}

// Validate says what is wrong with r, if anything.
func (r Range) Validate() error {
	if r.Base < BlockSize {
		return fmt.Errorf("the id range must start at %d or above, clear of the host's own users", BlockSize)
	}
	if r.Blocks < 1 {
		return fmt.Errorf("the id range needs at least one block of %d ids", BlockSize)
	}
	if end := uint64(r.Base) + uint64(r.Blocks)*BlockSize - 1; end > MaxID {
		return fmt.Errorf("the id range %d-%d ends above %d", r.Base, end, uint64(MaxID))
	}
	return nil
}

// Allocator gives out blocks of a range.
type Allocator struct {
	r    Range
	mu   sync.Mutex
	used map[uint32]bool
	next int // where the search for a free block starts
}

// New returns an allocator of r, with no block in use.
func New(r Range) (*Allocator, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &Allocator{r: r, used: map[uint32]bool{}}, nil
}

// Range is what a gives out.
func (a *Allocator) Range() Range { return a.r }

// Allocate takes a free block and returns its first host id.
func (a *Allocator) Allocate() (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < a.r.Blocks; i++ {
		n := (a.next + i) % a.r.Blocks
		base := a.r.Base + uint32(n)*BlockSize
		if !a.used[base] {
			a.used[base] = true
			// Round robin: a block just freed is the last to be reused, so
			// that leftovers of a deleted session, if any, meet no one.
			a.next = n + 1
			return base, nil
		}
	}
	return 0, errdefs.ErrResourceExhausted.WithMessage(fmt.Sprintf("all %d user-namespace id blocks are in use: delete a session first", a.r.Blocks))
}

// Reserve marks base, a block an existing session holds, as in use. It
// reports false when base is not a block of this range (the range changed
// since), or is taken already.
func (a *Allocator) Reserve(base uint32) bool {
	if base < a.r.Base || (base-a.r.Base)%BlockSize != 0 || int((base-a.r.Base)/BlockSize) >= a.r.Blocks {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used[base] {
		return false
	}
	a.used[base] = true
	return true
}

// Holds says whether base is a block given out (or reserved) here.
func (a *Allocator) Holds(base uint32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used[base]
}

// Release gives a block back.
func (a *Allocator) Release(base uint32) {
	a.mu.Lock()
	delete(a.used, base)
	a.mu.Unlock()
}

// InUse counts the blocks given out.
func (a *Allocator) InUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.used)
}

package disk

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// Admission holds the disk promised to every session and pooled sandbox
// of this daemon whose filesystem exists or is being made, by id: what
// admission counts as outstanding. A promise is made before its image, under
// the ledger's lock, so concurrent creates cannot promise the same free
// space twice; it ends when the session's folder is removed. Each promise
// of a session's disk names its owner, whose disks together stay within
// their share (disk_share_per_uid); a pooled sandbox's is no one's until
// a claim adopts it.
type Admission struct {
	cfg   config.Config
	probe Probe
	// pristine makes session disks as copies of a pristine image.
	pristine *volume.Pristine
	log      *slog.Logger

	mu       sync.Mutex
	promised map[string]promise
	// freed counts the promises ended: a pool waiting for space looks
	// again when it moved.
	freed atomic.Uint64
}

// New is the admission of the data dir of cfg, reading the host's disk
// through probe (nil: package volume's answers).
func New(cfg config.Config, probe Probe, log *slog.Logger) *Admission {
	if probe == nil {
		probe = volumeProbe{kind: cfg.DiskQuota}
	}
	return &Admission{
		cfg:      cfg,
		probe:    probe,
		pristine: &volume.Pristine{Dir: filepath.Join(cfg.DataDir, "disk-images")},
		log:      log,
		promised: map[string]promise{},
	}
}

// VolumePrefix starts the id of a volume's disk (session ids are hex):
// volumes are promised and made as session disks are, in a folder of
// their own.
const VolumePrefix = "volume-"

// Dir is the folder of disk id (the daemon's layout): a session's, or a
// volume's.
func (a *Admission) Dir(id string) string {
	if strings.HasPrefix(id, VolumePrefix) {
		return filepath.Join(a.cfg.DataDir, "volumes", id)
	}
	return filepath.Join(a.cfg.DataDir, "sessions", id)
}

// Freed is how many promises have ended so far.
func (a *Admission) Freed() uint64 { return a.freed.Load() }

// Writable says why session id's filesystem takes no writes, nil if it
// does.
func (a *Admission) Writable(id string) error { return a.probe.Writable(a.Dir(id)) }

// promise is one disk's entry in the ledger.
type promise struct {
	size  int64
	owner Owner
	// held is a folder being written (Hold), not a disk.
	held bool
}

// Owner is whom a disk is promised to: a session's owner, or a warm
// pool (no one's, until a claim adopts it).
type Owner struct {
	uid   uint32
	owned bool
}

// Session is the owner of a disk made for a session of uid.
func Session(uid uint32) Owner { return Owner{uid: uid, owned: true} }

// Pool owns the disk of a pooled sandbox.
var Pool = Owner{}

// hasShare reports whether the owner's new disks must fit a per-user
// share: a session's, but root's (root's sessions are the operator's,
// bounded by the data dir alone, as root's templates' pools are).
func (o Owner) hasShare() bool { return o.owned && o.uid != 0 }

// budgetLocked is the data dir's disk budget now. The caller holds a.mu.
func (a *Admission) budgetLocked() (budget, error) {
	free, err := a.probe.Free(a.cfg.DataDir)
	if err != nil {
		return budget{}, err
	}
	b := budget{free: free, floor: a.cfg.DataDirMinFreeMB << 20, overcommit: a.cfg.DiskOvercommit}
	for id, p := range a.promised {
		b.outstanding += max(0, p.size-a.probe.Allocated(a.Dir(id)))
		b.promised = satAdd(b.promised, p.size)
	}
	return b, nil
}

// shareLocked refuses a new disk of size for owner past its share,
// reading image sizes only when it must: capacity is at least what an
// empty host of the same free space could promise (every disk counted
// whole), so a disk that fits that lower bound fits, for one statfs. A
// pool claim stays a fraction of a millisecond with hundreds of disks.
// The caller holds a.mu.
func (a *Admission) shareLocked(ctx context.Context, owner Owner, size int64) error {
	if !owner.hasShare() || size == 0 {
		return nil
	}
	free, err := a.probe.Free(a.cfg.DataDir)
	if err != nil {
		return err
	}
	low := budget{free: free, floor: a.cfg.DataDirMinFreeMB << 20, overcommit: a.cfg.DiskOvercommit}
	for _, p := range a.promised {
		low.promised = satAdd(low.promised, p.size)
	}
	low.outstanding = low.promised
	if low.fitsShare(a.heldLocked(owner.uid), size, a.cfg.DiskShare()) {
		return nil
	}
	b, err := a.budgetLocked()
	if err != nil {
		return err
	}
	return a.checkShareLocked(ctx, b, owner, size)
}

// heldLocked is what the disks promised to uid's sessions hold together.
// The caller holds a.mu.
func (a *Admission) heldLocked(uid uint32) int64 {
	var held int64
	for _, p := range a.promised {
		if p.owner == Session(uid) {
			held = satAdd(held, p.size)
		}
	}
	return held
}

// checkShareLocked refuses a new disk of size for owner past its share.
// The caller holds a.mu.
func (a *Admission) checkShareLocked(ctx context.Context, b budget, owner Owner, size int64) error {
	if !owner.hasShare() || size == 0 {
		return nil
	}
	fraction := a.cfg.DiskShare()
	if held := a.heldLocked(owner.uid); !b.fitsShare(held, size, fraction) {
		logging.From(ctx).Info("disk refused: past the user's share", "owner", owner.uid, "disk_mb", mib(size), "held_mb", mib(held), "budget", b.String())
		return b.shareRefusal(owner.uid, held, size, fraction)
	}
	return nil
}

// CheckShare refuses a disk of diskMB for a session of uid past the
// user's share, before a create claims a pooled sandbox or starts one:
// the claim (Adopt) and the cold start's promise check again under
// the ledger's lock.
func (a *Admission) CheckShare(ctx context.Context, uid uint32, diskMB int64) error {
	owner := Session(uid)
	if a.cfg.DiskQuota != volume.Loop || !owner.hasShare() {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.shareLocked(ctx, owner, diskMB<<20)
}

// Adopt makes the disk of pooled sandbox id uid's: a claim hands it
// to a session of theirs. It is refused past the user's share.
func (a *Admission) Adopt(ctx context.Context, id string, uid uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.promised[id]
	if !ok || p.owner == Session(uid) {
		return nil
	}
	if p.owner == Pool && a.cfg.DiskQuota == volume.Loop {
		if err := a.shareLocked(ctx, Session(uid), p.size); err != nil {
			return err
		}
	}
	p.owner = Session(uid)
	a.promised[id] = p
	return nil
}

// promise promises session id a disk of size bytes, if its
// filesystem is new and the data dir can hold it, within its owner's
// share; a filesystem that exists already (a stopped session's, one from
// before a daemon restart) is counted without a check: its space was
// promised when it was made. It reports whether it made a new promise.
func (a *Admission) promise(ctx context.Context, id string, size int64, owner Owner) (bool, error) {
	if a.cfg.DiskQuota != volume.Loop {
		// A plain folder is not sized: nothing to promise, but a new one
		// still needs the data dir above its floor.
		size = 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.promised[id]; ok {
		return false, nil
	}
	if a.probe.Exists(a.Dir(id)) {
		a.promised[id] = promise{size: size, owner: owner}
		return false, nil
	}
	b, err := a.budgetLocked()
	if err != nil {
		return false, err
	}
	if !b.fits(size) {
		// A pool says once that it waits for space (pool.fill).
		if owner != Pool {
			logging.From(ctx).Info("disk refused: the data dir cannot hold it", "session", id, "disk_mb", mib(size), "budget", b.String())
		}
		return false, b.refusal(size)
	}
	if err := a.checkShareLocked(ctx, b, owner, size); err != nil {
		return false, err
	}
	a.promised[id] = promise{size: size, owner: owner}
	return true, nil
}

// Forget ends session id's promise: its folder is gone.
func (a *Admission) Forget(id string) {
	a.mu.Lock()
	if _, ok := a.promised[id]; ok {
		delete(a.promised, id)
		a.freed.Add(1)
	}
	a.mu.Unlock()
}

// Ensure makes session id's filesystem ready (volume.Ensure), making
// it only if the data dir can hold it, within owner's share. When the
// data dir cannot, yield (nil: none) is asked to give disk back (the
// warm pools' surplus) and, if it did, the disk is asked for once more.
func (a *Admission) Ensure(ctx context.Context, id string, diskMB int64, owner Owner, yield func(context.Context) bool) error {
	err := a.ensure(ctx, id, diskMB, owner)
	if errdefs.IsResourceExhausted(err) && !IsShareRefusal(err) && yield != nil && yield(ctx) {
		// Pooled sandboxes kept for a burst gave their disk back.
		err = a.ensure(ctx, id, diskMB, owner)
	}
	return err
}

func (a *Admission) ensure(ctx context.Context, id string, diskMB int64, owner Owner) error {
	dir := a.Dir(id)
	isNew, err := a.promise(ctx, id, diskMB<<20, owner)
	if err != nil {
		return err
	}
	if err := volume.Ensure(ctx, a.cfg.DiskQuota, a.pristine, dir, diskMB<<20); err != nil {
		if isNew && !a.probe.Exists(dir) {
			a.Forget(id)
		}
		return err
	}
	return nil
}

// Space is the data dir's free space against its floor, for
// /v1/health.
func (a *Admission) Space() (free int64, short bool, err error) {
	free, err = a.probe.Free(a.cfg.DataDir)
	if err != nil {
		return 0, false, err
	}
	return free, free < a.cfg.DataDirMinFreeMB<<20, nil
}

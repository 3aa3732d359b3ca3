package daemon

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// diskProbe is what the daemon asks of the host's disk: package volume
// answers for real, a unit test's fake for a host it makes up.
type diskProbe interface {
	// free is what dir's filesystem has left for the daemon.
	free(dir string) (int64, error)
	// allocated is what the session folder's image takes on the host now.
	allocated(sessionDir string) int64
	// exists reports whether the session folder's filesystem was made.
	exists(sessionDir string) bool
	// writable says why the session's filesystem takes no writes, nil if
	// it does.
	writable(sessionDir string) error
}

// volumeProbe is the host's disk, through package volume.
type volumeProbe struct{ kind volume.Kind }

func (p volumeProbe) free(dir string) (int64, error) { return volume.Free(dir) }
func (p volumeProbe) allocated(dir string) int64     { return volume.Allocated(p.kind, dir) }
func (p volumeProbe) exists(dir string) bool         { return volume.Exists(p.kind, dir) }
func (p volumeProbe) writable(dir string) error      { return volume.CheckWritable(p.kind, dir) }

var _ diskProbe = volumeProbe{}

// diskLedger holds the disk promised to every session and pooled sandbox
// of this daemon whose filesystem exists or is being made, by id: what
// admission counts as outstanding. A promise is made before its image, under
// the ledger's lock, so concurrent creates cannot promise the same free
// space twice; it ends when the session's folder is removed. Each promise
// of a session's disk names its owner, whose disks together stay within
// their share (disk_share_per_uid); a pooled sandbox's is no one's until
// a claim adopts it.
type diskLedger struct {
	mu       sync.Mutex
	promised map[string]promise
	// freed counts the promises ended: a pool waiting for space looks
	// again when it moved.
	freed atomic.Uint64
}

// freedCount is how many promises have ended so far.
func (l *diskLedger) freedCount() uint64 { return l.freed.Load() }

// promise is one disk's entry in the ledger.
type promise struct {
	size  int64
	owner diskOwner
}

// diskOwner is whom a disk is promised to: a session's owner, or a warm
// pool (no one's, until a claim adopts it).
type diskOwner struct {
	uid   uint32
	owned bool
}

// sessionDisk is the owner of a disk made for a session of uid.
func sessionDisk(uid uint32) diskOwner { return diskOwner{uid: uid, owned: true} }

// poolDisk owns the disk of a pooled sandbox.
var poolDisk = diskOwner{}

// hasShare reports whether the owner's new disks must fit a per-user
// share: a session's, but root's (root's sessions are the operator's,
// bounded by the data dir alone, as root's templates' pools are).
func (o diskOwner) hasShare() bool { return o.owned && o.uid != 0 }

func newDiskLedger() *diskLedger { return &diskLedger{promised: map[string]promise{}} }

// budget is the data dir's disk budget now. The caller holds l.mu.
func (d *Daemon) budgetLocked() (diskBudget, error) {
	free, err := d.probe.free(d.cfg.DataDir)
	if err != nil {
		return diskBudget{}, err
	}
	b := diskBudget{free: free, floor: d.cfg.DataDirMinFreeMB << 20, overcommit: d.cfg.DiskOvercommit}
	for id, p := range d.disks.promised {
		b.outstanding += max(0, p.size-d.probe.allocated(d.paths.session(id)))
		b.promised = satAdd(b.promised, p.size)
	}
	return b, nil
}

// shareLocked refuses a new disk of size for owner past its share,
// reading image sizes only when it must: capacity is at least what an
// empty host of the same free space could promise (every disk counted
// whole), so a disk that fits that lower bound fits, for one statfs. A
// pool claim stays a fraction of a millisecond with hundreds of disks.
// The caller holds l.mu.
func (d *Daemon) shareLocked(ctx context.Context, owner diskOwner, size int64) error {
	if !owner.hasShare() || size == 0 {
		return nil
	}
	free, err := d.probe.free(d.cfg.DataDir)
	if err != nil {
		return err
	}
	low := diskBudget{free: free, floor: d.cfg.DataDirMinFreeMB << 20, overcommit: d.cfg.DiskOvercommit}
	for _, p := range d.disks.promised {
		low.promised = satAdd(low.promised, p.size)
	}
	low.outstanding = low.promised
	if low.fitsShare(d.heldLocked(owner.uid), size, d.cfg.DiskShare()) {
		return nil
	}
	b, err := d.budgetLocked()
	if err != nil {
		return err
	}
	return d.checkShareLocked(ctx, b, owner, size)
}

// heldLocked is what the disks promised to uid's sessions hold together.
// The caller holds l.mu.
func (d *Daemon) heldLocked(uid uint32) int64 {
	var held int64
	for _, p := range d.disks.promised {
		if p.owner == sessionDisk(uid) {
			held = satAdd(held, p.size)
		}
	}
	return held
}

// checkShareLocked refuses a new disk of size for owner past its share.
// The caller holds l.mu.
func (d *Daemon) checkShareLocked(ctx context.Context, b diskBudget, owner diskOwner, size int64) error {
	if !owner.hasShare() || size == 0 {
		return nil
	}
	fraction := d.cfg.DiskShare()
	if held := d.heldLocked(owner.uid); !b.fitsShare(held, size, fraction) {
		logging.From(ctx).Info("disk refused: past the user's share", "owner", owner.uid, "disk_mb", mib(size), "held_mb", mib(held), "budget", b.String())
		return b.shareRefusal(owner.uid, held, size, fraction)
	}
	return nil
}

// checkDiskShare refuses a disk of diskMB for a session of uid past the
// user's share, before a create claims a pooled sandbox or starts one:
// the claim (adoptDisk) and the cold start's promise check again under
// the ledger's lock.
func (d *Daemon) checkDiskShare(ctx context.Context, uid uint32, diskMB int64) error {
	owner := sessionDisk(uid)
	if d.cfg.DiskQuota != volume.Loop || !owner.hasShare() {
		return nil
	}
	l := d.disks
	l.mu.Lock()
	defer l.mu.Unlock()
	return d.shareLocked(ctx, owner, diskMB<<20)
}

// adoptDisk makes the disk of pooled sandbox id uid's: a claim hands it
// to a session of theirs. It is refused past the user's share.
func (d *Daemon) adoptDisk(ctx context.Context, id string, uid uint32) error {
	l := d.disks
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.promised[id]
	if !ok || p.owner == sessionDisk(uid) {
		return nil
	}
	if p.owner == poolDisk && d.cfg.DiskQuota == volume.Loop {
		if err := d.shareLocked(ctx, sessionDisk(uid), p.size); err != nil {
			return err
		}
	}
	p.owner = sessionDisk(uid)
	l.promised[id] = p
	return nil
}

// promiseDisk promises session id a disk of size bytes, if its
// filesystem is new and the data dir can hold it, within its owner's
// share; a filesystem that exists already (a stopped session's, one from
// before a daemon restart) is counted without a check: its space was
// promised when it was made. It reports whether it made a new promise.
func (d *Daemon) promiseDisk(ctx context.Context, id string, size int64, owner diskOwner) (bool, error) {
	if d.cfg.DiskQuota != volume.Loop {
		// A plain folder is not sized: nothing to promise, but a new one
		// still needs the data dir above its floor.
		size = 0
	}
	l := d.disks
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.promised[id]; ok {
		return false, nil
	}
	if d.probe.exists(d.paths.session(id)) {
		l.promised[id] = promise{size: size, owner: owner}
		return false, nil
	}
	b, err := d.budgetLocked()
	if err != nil {
		return false, err
	}
	if !b.fits(size) {
		// A pool says once that it waits for space (pool.fill).
		if owner != poolDisk {
			logging.From(ctx).Info("disk refused: the data dir cannot hold it", "session", id, "disk_mb", mib(size), "budget", b.String())
		}
		return false, b.refusal(size)
	}
	if err := d.checkShareLocked(ctx, b, owner, size); err != nil {
		return false, err
	}
	l.promised[id] = promise{size: size, owner: owner}
	return true, nil
}

// forgetDisk ends session id's promise: its folder is gone.
func (d *Daemon) forgetDisk(id string) {
	d.disks.mu.Lock()
	if _, ok := d.disks.promised[id]; ok {
		delete(d.disks.promised, id)
		d.disks.freed.Add(1)
	}
	d.disks.mu.Unlock()
}

// ensureDisk makes session id's filesystem ready (volume.Ensure), making
// it only if the data dir can hold it, within owner's share.
func (d *Daemon) ensureDisk(ctx context.Context, id string, diskMB int64, owner diskOwner) error {
	dir := d.paths.session(id)
	isNew, err := d.promiseDisk(ctx, id, diskMB<<20, owner)
	if err != nil {
		return err
	}
	if err := volume.Ensure(ctx, d.cfg.DiskQuota, d.pristine, dir, diskMB<<20); err != nil {
		if isNew && !d.probe.exists(dir) {
			d.forgetDisk(id)
		}
		return err
	}
	return nil
}

// dataDirSpace is the data dir's free space against its floor, for
// /v1/health.
func (d *Daemon) dataDirSpace() (free int64, short bool, err error) {
	free, err = d.probe.free(d.cfg.DataDir)
	if err != nil {
		return 0, false, err
	}
	return free, free < d.cfg.DataDirMinFreeMB<<20, nil
}

package daemon

import (
	"context"
	"sync"

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
// space twice; it ends when the session's folder is removed.
type diskLedger struct {
	mu       sync.Mutex
	promised map[string]int64
}

func newDiskLedger() *diskLedger { return &diskLedger{promised: map[string]int64{}} }

// budget is the data dir's disk budget now. The caller holds l.mu.
func (d *Daemon) budgetLocked() (diskBudget, error) {
	free, err := d.probe.free(d.cfg.DataDir)
	if err != nil {
		return diskBudget{}, err
	}
	b := diskBudget{free: free, floor: d.cfg.DataDirMinFreeMB << 20, overcommit: d.cfg.DiskOvercommit}
	for id, size := range d.disks.promised {
		b.outstanding += max(0, size-d.probe.allocated(d.paths.session(id)))
	}
	return b, nil
}

// promiseDisk promises session id a disk of size bytes, if its
// filesystem is new and the data dir can hold it; a filesystem that
// exists already (a stopped session's, one from before a daemon restart)
// is counted without a check: its space was promised when it was made. It
// reports whether it made a new promise.
func (d *Daemon) promiseDisk(ctx context.Context, id string, size int64) (bool, error) {
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
		l.promised[id] = size
		return false, nil
	}
	b, err := d.budgetLocked()
	if err != nil {
		return false, err
	}
	if !b.fits(size) {
		logging.From(ctx).Info("disk refused: the data dir cannot hold it", "session", id, "disk_mb", mib(size), "budget", b.String())
		return false, b.refusal(size)
	}
	l.promised[id] = size
	return true, nil
}

// forgetDisk ends session id's promise: its folder is gone.
func (d *Daemon) forgetDisk(id string) {
	d.disks.mu.Lock()
	delete(d.disks.promised, id)
	d.disks.mu.Unlock()
}

// ensureDisk makes session id's filesystem ready (volume.Ensure), making
// it only if the data dir can hold it.
func (d *Daemon) ensureDisk(ctx context.Context, id string, diskMB int64) error {
	dir := d.paths.session(id)
	isNew, err := d.promiseDisk(ctx, id, diskMB<<20)
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

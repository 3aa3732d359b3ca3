package disk

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxd/sandboxd/isolation/volume"
)

// Disk is a session's disk as the daemon's records say: whose it is and
// how big.
type Disk struct {
	ID    string
	MB    int64
	Owner uint32
}

// Reconcile mounts each recorded session's filesystem again (after a
// reboot, files are served even while a session is stopped) and removes
// session folders no record owns: what a daemon killed during a create or
// a delete left behind. A disk that cannot be made ready is told to failed,
// whose error ends the reconcile.
func (a *Admission) Reconcile(ctx context.Context, disks []Disk, failed func(id string, err error) error) error {
	known := make(map[string]bool, len(disks))
	for _, d := range disks {
		known[d.ID] = true
	}
	for _, folder := range []string{"sessions", "volumes"} {
		what := "session"
		if folder == "volumes" {
			what = "volume"
		}
		ents, err := os.ReadDir(filepath.Join(a.cfg.DataDir, folder))
		if errors.Is(err, fs.ErrNotExist) && folder == "volumes" {
			continue // a data dir from before volumes
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			if known[e.Name()] {
				continue
			}
			if err := volume.Remove(filepath.Join(a.cfg.DataDir, folder, e.Name())); err != nil {
				a.log.Warn("remove orphan "+what+" folder", what, e.Name(), "err", err)
			} else {
				a.log.Info("removed orphan "+what+" folder", what, e.Name())
			}
		}
	}
	for _, d := range disks {
		// A disk whose image is gone is made again only if the data dir
		// can hold it (Ensure); one that exists is counted as promised.
		if err := a.Ensure(ctx, d.ID, d.MB, Session(d.Owner), nil); err != nil {
			a.log.Warn("session disk", "session", d.ID, "err", err)
			if err := failed(d.ID, err); err != nil {
				return err
			}
		}
	}
	return nil
}

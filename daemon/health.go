package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
)

// Health says whether the daemon can do its work: it serves (or it would
// not answer), and its data dir has space above its floor. A data dir it
// cannot read is reported, not an error: health answers as long as the
// daemon serves.
func (d *Daemon) Health(ctx context.Context) (*api.Health, error) {
	h := &api.Health{Status: api.HealthOK}
	free, short, err := d.dataDirSpace()
	if err != nil {
		h.Status = api.HealthDegraded
		h.DataDir = &api.DataDirHealth{MinFreeMB: d.cfg.DataDirMinFreeMB}
		return h, nil
	}
	h.DataDir = &api.DataDirHealth{FreeMB: mib(free), MinFreeMB: d.cfg.DataDirMinFreeMB, OK: !short}
	if short {
		h.Status = api.HealthDegraded
	}
	return h, nil
}

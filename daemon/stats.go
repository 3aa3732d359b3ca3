package daemon

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// Stats reports what a session uses now.
func (d *Daemon) Stats(ctx context.Context, id string) (*api.Stats, error) {
	s, err := d.lookupAwake(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	sb := s.sb
	out := &api.Stats{Status: s.rec.Status, ExecCount: s.rec.ExecCount}
	dir := d.paths.session(s.rec.ID)
	s.mu.Unlock()
	used, size, err := volume.Usage(d.cfg.DiskQuota, dir)
	if err != nil {
		return nil, err
	}
	out.DiskBytes, out.DiskLimitBytes = used, size
	if sb == nil {
		return out, nil
	}
	out.UptimeS = time.Since(sb.Started()).Seconds()
	u, err := sb.Stats()
	if err != nil {
		return nil, err
	}
	out.CPUSeconds = u.CPUSeconds
	out.MemoryBytes = u.MemoryBytes
	out.MemoryLimitBytes = u.MemoryLimit
	out.Pids = u.Pids
	return out, nil
}

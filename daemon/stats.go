package daemon

import (
	"context"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Stats reports what a session uses now.
func (d *Daemon) Stats(ctx context.Context, id string) (*api.Stats, error) {
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	sb := s.sb
	out := &api.Stats{Status: s.rec.Status, ExecCount: s.rec.ExecCount}
	ws := d.workspaceOf(s.rec.ID)
	s.mu.Unlock()
	out.DiskBytes = diskUsage(ws)
	if sb == nil {
		return out, nil
	}
	out.DiskBytes += diskUsage(sb.Tmp())
	out.UptimeS = time.Since(sb.Started()).Seconds()
	u, err := sb.Usage()
	if err != nil {
		return nil, err
	}
	out.CPUSeconds = u.CPUSeconds
	out.MemoryBytes = u.MemoryBytes
	out.MemoryLimitBytes = u.MemoryLimit
	out.Pids = u.Pids
	return out, nil
}

// diskUsage adds up the blocks under dir, without following symlinks.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := e.Info(); err == nil {
			if st, ok := blocks(fi); ok {
				n += st
			} else {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

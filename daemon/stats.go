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
	sb, rec := s.Sandbox(), s.Snapshot()
	out := &api.Stats{Status: rec.Status, ExecCount: rec.ExecCount}
	dir := d.paths.session(rec.ID)
	sid, slot := rec.ID, rec.NetSlot
	// The session's network figures are here, for its owner, and never
	// per session in /metrics, which every user may read.
	dns := d.metrics.DNSTally(sid)
	out.DNSRefused, out.DNSRateLimited = dns.Refused, dns.RateLimited
	if slot != 0 && d.net.owner != nil {
		if n, err := d.net.owner.Denied(sid); err == nil {
			out.NetworkDeniedPackets = n
		}
	}
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

package daemon

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
	sess "github.com/sandboxd/sandboxd/daemon/session"
	"github.com/sandboxd/sandboxd/internal/version"
	"github.com/sandboxd/sandboxd/isolation/idmap"
	"github.com/sandboxd/sandboxd/seccomp"
)

// Info describes the daemon and the host as the caller may see them.
func (d *Daemon) Info(ctx context.Context) (*api.Info, error) {
	caller := callerFrom(ctx)
	rt := d.rt.Info()
	info := &api.Info{
		Version:       version.Version,
		APIVersion:    api.Version,
		Runtime:       d.cfg.DefaultRuntime,
		Runtimes:      apiRuntimes(d.runtimes.known),
		CgroupVersion: rt.CgroupVersion,
		DataDir:       d.cfg.DataDir,
		RunDir:        d.cfg.RunDir,
		Supervisor:    d.cfg.Supervisor,
		Seccomp: api.SeccompInfo{
			Enabled:        true,
			LibraryVersion: seccomp.LibraryVersion(),
			Syscalls:       len(seccomp.Allowed(d.cfg.Seccomp)),
			LogDenied:      d.monitor != nil,
		},
		Defaults:   d.cfg.Defaults.API(),
		Max:        d.cfg.Max.API(),
		SandboxUID: d.rt.UID(),
		MCPServers: d.gateway.Info(),
	}
	info.ProcView = d.procView.info(rt.ProcViewProblem == "")
	info.Network = api.NetworkInfo{Modes: []string{api.NetworkNone}}
	if n := d.net.owner; n != nil {
		w := n.Info()
		info.Network.Modes = append(info.Network.Modes, api.NetworkAllowlist, api.NetworkOpen)
		info.Network.Subnet, info.Network.Subnet6, info.Network.Table = w.Subnet, w.Subnet6, w.Table
	} else {
		info.Network.Problem = d.net.off
	}
	if d.launch.ids != nil {
		r := d.launch.ids.Range()
		info.UserNS = api.UserNSInfo{Enabled: true, IDBase: r.Base, BlockSize: idmap.BlockSize, Blocks: r.Blocks, InUse: d.launch.ids.InUse()}
	}
	info.Pool.Templates = d.tmpl.Fills(ctx, false)
	for _, f := range info.Pool.Templates {
		info.Pool.Size += f.Size
		info.Pool.Target += f.Target
		info.Pool.Idle += f.Idle
	}
	for _, s := range d.sessions.all() {
		st, owner := s.Status()
		if !caller.mayUse(owner) {
			continue
		}
		info.Sessions.Total++
		switch st {
		case sess.Running:
			info.Sessions.Running++
		case sess.Paused:
			info.Sessions.Paused++
		case sess.Hibernated:
			info.Sessions.Hibernated++
		case sess.Stopped:
			info.Sessions.Stopped++
		case sess.Failed:
			info.Sessions.Failed++
		}
	}
	return info, nil
}

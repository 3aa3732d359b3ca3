package daemon

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/isolation"
)

// Sessions run on runc (libcontainer) or runsc (gVisor): named by the
// session, else by its template, else default_runtime. With
// strict_runtime the default is the only one, and a daemon whose default
// is unusable does not start: a host that must never run agent code
// outside gVisor never does, not even for a moment.

// runtimeInfo is what the runtime says of runtime name (Usable false when
// it knows none of that name).
func (d *Daemon) runtimeInfo(name string) isolation.RuntimeInfo {
	for _, r := range d.runtimes {
		if r.Name == name {
			return r
		}
	}
	return isolation.RuntimeInfo{Name: name, Problem: "this daemon does not know it"}
}

// runscOptions is how the runtime runs runsc.
func runscOptions(c *config.Config) isolation.RunscOptions {
	return isolation.RunscOptions{Path: c.Runsc.Path, Platform: c.Runsc.Platform, Flags: c.Runsc.Flags}
}

// CheckStrictRuntime says, before a daemon starts (sandboxd --validate),
// what checkStrictRuntime would refuse it for.
func CheckStrictRuntime(c *config.Config) error {
	if !c.StrictRuntime || c.DefaultRuntime != api.RuntimeRunsc {
		return nil
	}
	if err := isolation.CheckRunsc(runscOptions(c)); err != nil {
		return fmt.Errorf("strict_runtime is set and the default runtime %s is not usable: %w", c.DefaultRuntime, err)
	}
	return nil
}

// checkStrictRuntime refuses to start a daemon whose strict runtime is
// unusable.
func (d *Daemon) checkStrictRuntime() error {
	if !d.cfg.StrictRuntime {
		return nil
	}
	if ri := d.runtimeInfo(d.cfg.DefaultRuntime); !ri.Usable {
		return fmt.Errorf("strict_runtime is set and the default runtime %s is not usable: %s", d.cfg.DefaultRuntime, ri.Problem)
	}
	return nil
}

// checkRuntime says whether a session or template may run on runtime name
// ("" is asked for nothing): a runtime of the API's, allowed by strict
// mode, usable on this host. It returns the name, the default for "".
func (d *Daemon) checkRuntime(name string) (string, error) {
	if name == "" {
		return d.cfg.DefaultRuntime, nil
	}
	if name != api.RuntimeRunc && name != api.RuntimeRunsc {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "runtime %s is not known: use %q or %q", api.Quote(name), api.RuntimeRunc, api.RuntimeRunsc)
	}
	if d.cfg.StrictRuntime && name != d.cfg.DefaultRuntime {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "this daemon runs sessions only on %s (strict_runtime): runtime %s is refused", d.cfg.DefaultRuntime, name)
	}
	if ri := d.runtimeInfo(name); !ri.Usable {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "runtime %s is not usable on this host: %s", name, ri.Problem)
	}
	return name, nil
}

// sessionRuntime is the runtime of a new session: asked for by the
// request, else its template's, else the default; a networked session
// needs a runtime that can join its network.
func (d *Daemon) sessionRuntime(asked string, t *pool.Template, network string) (string, error) {
	if asked == "" {
		asked = t.Def().Runtime
	}
	name, err := d.checkRuntime(asked)
	if err != nil {
		return "", err
	}
	if network != api.NetworkNone && !d.runtimeInfo(name).Networks {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "runtime %s cannot give sessions a network on this host (runsc builds before 2023 refuse any network namespace on Linux 6 and later): use network \"none\", runtime %q, or a newer runsc", name, api.RuntimeRunc)
	}
	return name, nil
}

// runtimeOf is the runtime a session record runs on: records from before
// runtimes could be chosen ran on runc.
func runtimeOf(runtime string) string {
	if runtime == "" {
		return api.RuntimeRunc
	}
	return runtime
}

// apiRuntimes is what /v1/info says of the runtimes.
func apiRuntimes(rs []isolation.RuntimeInfo) []api.RuntimeInfo {
	out := make([]api.RuntimeInfo, 0, len(rs))
	for _, r := range rs {
		out = append(out, api.RuntimeInfo{Name: r.Name, Usable: r.Usable, Problem: r.Problem, Version: r.Version, Platform: r.Platform, Networks: r.Networks})
	}
	return out
}

// usableRuntimes are the names of the runtimes a session can ask for here
// (checkRuntime's rule: usable, and allowed by strict_runtime), for
// /v1/node: a scheduler places a session only where its runtime runs.
func (d *Daemon) usableRuntimes() []string {
	out := []string{}
	for _, r := range d.runtimes {
		if _, err := d.checkRuntime(r.Name); err == nil {
			out = append(out, r.Name)
		}
	}
	return out
}

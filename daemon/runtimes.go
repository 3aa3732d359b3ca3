package daemon

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/runsc"
)

// Sessions run on runc (libcontainer) or runsc (gVisor): named by the
// session, else by its template, else default_runtime. With
// strict_runtime the default is the only one, and a daemon whose default
// is unusable does not start: a host that must never run agent code
// outside gVisor never does, not even for a moment.

// runtimeRules choose a session's runtime: what the runtime said of its
// runtimes at start, and the configuration's default and strictness. They
// are the one place that decides whether a runtime may run a session.
type runtimeRules struct {
	// known are what the runtime said of its runtimes at start.
	known    []isolation.RuntimeInfo
	fallback string // default_runtime
	strict   bool   // strict_runtime
}

func newRuntimeRules(c *config.Config, known []isolation.RuntimeInfo) runtimeRules {
	return runtimeRules{known: known, fallback: c.DefaultRuntime, strict: c.StrictRuntime}
}

// info is what the runtime says of runtime name (Usable false when it
// knows none of that name).
func (rr runtimeRules) info(name string) isolation.RuntimeInfo {
	for _, r := range rr.known {
		if r.Name == name {
			return r
		}
	}
	return isolation.RuntimeInfo{Name: name, Problem: "this daemon does not know it"}
}

// runscOptions is how the runtime runs runsc.
func runscOptions(c *config.Config) runsc.Options {
	return runsc.Options{Path: c.Runsc.Path, Platform: c.Runsc.Platform, Flags: c.Runsc.Flags}
}

// CheckStrictRuntime says, before a daemon starts (sandboxd --validate),
// what checkStrictRuntime would refuse it for.
func CheckStrictRuntime(c *config.Config) error {
	if !c.StrictRuntime || c.DefaultRuntime != api.RuntimeRunsc {
		return nil
	}
	if err := runsc.Check(runscOptions(c)); err != nil {
		return fmt.Errorf("strict_runtime is set and the default runtime %s is not usable: %w", c.DefaultRuntime, err)
	}
	return nil
}

// checkStrict refuses to start a daemon whose strict runtime is unusable.
func (rr runtimeRules) checkStrict() error {
	if !rr.strict {
		return nil
	}
	if ri := rr.info(rr.fallback); !ri.Usable {
		return fmt.Errorf("strict_runtime is set and the default runtime %s is not usable: %s", rr.fallback, ri.Problem)
	}
	return nil
}

// check says whether a session or template may run on runtime name ("" is
// asked for nothing): a runtime of the API's, allowed by strict mode,
// usable on this host. It returns the name, the default for "".
func (rr runtimeRules) check(name string) (string, error) {
	if name == "" {
		return rr.fallback, nil
	}
	if name != api.RuntimeRunc && name != api.RuntimeRunsc {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "runtime %s is not known: use %q or %q", api.Quote(name), api.RuntimeRunc, api.RuntimeRunsc)
	}
	if rr.strict && name != rr.fallback {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "this daemon runs sessions only on %s (strict_runtime): runtime %s is refused", rr.fallback, name)
	}
	if ri := rr.info(name); !ri.Usable {
		return "", api.Errorf(errdefs.ErrInvalidArgument, "runtime %s is not usable on this host: %s", name, ri.Problem)
	}
	return name, nil
}

// forSession is the runtime of a new session: asked for by the request,
// else its template's (ofTemplate), else the default; a networked session
// needs a runtime that can join its network.
func (rr runtimeRules) forSession(asked, ofTemplate, network string) (string, error) {
	if asked == "" {
		asked = ofTemplate
	}
	name, err := rr.check(asked)
	if err != nil {
		return "", err
	}
	if network != api.NetworkNone && !rr.info(name).Networks {
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

// usable are the names of the runtimes a session can ask for here (check's
// rule: usable, and allowed by strict_runtime), for /v1/node: a scheduler
// places a session only where its runtime runs.
func (rr runtimeRules) usable() []string {
	out := []string{}
	for _, r := range rr.known {
		if _, err := rr.check(r.Name); err == nil {
			out = append(out, r.Name)
		}
	}
	return out
}

package daemon

import (
	"slices"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation"
)

// TestRuntimeRules checks the choice of a session's runtime on its own,
// without a daemon: the request's, the template's, the default; strict
// mode; runtimes that are unusable or cannot join a network.
func TestRuntimeRules(t *testing.T) {
	t.Parallel()
	known := []isolation.RuntimeInfo{
		{Name: isolation.RuntimeRunc, Usable: true, Networks: true},
		{Name: isolation.RuntimeRunsc, Usable: true},
	}
	unusable := []isolation.RuntimeInfo{known[0], {Name: isolation.RuntimeRunsc, Problem: "runsc is not installed"}}
	for _, tc := range []struct {
		name                 string
		known                []isolation.RuntimeInfo
		fallback             string
		strict               bool
		asked, tmpl, network string
		want                 string // "" when refused
		usable               []string
	}{
		{name: "default", known: known, fallback: "runc", network: api.NetworkNone, want: "runc", usable: []string{"runc", "runsc"}},
		{name: "template's", known: known, fallback: "runc", tmpl: "runsc", network: api.NetworkNone, want: "runsc", usable: []string{"runc", "runsc"}},
		{name: "request over template", known: known, fallback: "runsc", asked: "runc", tmpl: "runsc", network: api.NetworkNone, want: "runc", usable: []string{"runc", "runsc"}},
		{name: "unknown", known: known, fallback: "runc", asked: "kata", network: api.NetworkNone, usable: []string{"runc", "runsc"}},
		{name: "unusable", known: unusable, fallback: "runc", asked: "runsc", network: api.NetworkNone, usable: []string{"runc"}},
		{name: "strict refuses another", known: known, fallback: "runsc", strict: true, asked: "runc", network: api.NetworkNone, usable: []string{"runsc"}},
		{name: "strict default", known: known, fallback: "runsc", strict: true, network: api.NetworkNone, want: "runsc", usable: []string{"runsc"}},
		{name: "no network under runsc", known: known, fallback: "runsc", network: api.NetworkAllowlist, usable: []string{"runc", "runsc"}},
		{name: "network under runc", known: known, fallback: "runc", network: api.NetworkAllowlist, want: "runc", usable: []string{"runc", "runsc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := newRuntimeRules(&config.Config{DefaultRuntime: tc.fallback, StrictRuntime: tc.strict}, tc.known)
			got, err := rr.forSession(tc.asked, tc.tmpl, tc.network)
			switch {
			case tc.want == "" && !errdefs.IsInvalidArgument(err):
				t.Errorf("forSession = %q, %v; want an invalid-argument error", got, err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("forSession = %q, %v; want %q", got, err, tc.want)
			}
			if u := rr.usable(); !slices.Equal(u, tc.usable) {
				t.Errorf("usable = %v, want %v", u, tc.usable)
			}
		})
	}
	strict := newRuntimeRules(&config.Config{DefaultRuntime: "runsc", StrictRuntime: true}, unusable)
	if err := strict.checkStrict(); err == nil {
		t.Error("checkStrict accepted an unusable strict default")
	}
}

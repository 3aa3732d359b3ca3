package daemon

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
)

// maxPackages bounds one install's requirements.
const maxPackages = 100

// requirement is what a package of POST …/packages may be: a name, extras,
// version specifiers. No options, paths, URLs or environment markers: the
// list goes to pip's command line, and an install reaches only the index.
var requirement = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*\])?(?:(?:===|==|!=|~=|<=|>=|<|>)[A-Za-z0-9.*+!_-]+(?:,(?:===|==|!=|~=|<=|>=|<|>)[A-Za-z0-9.*+!_-]+)*)?$`)

// InstallPackages runs pip in the session, into /workspace/.local (so the
// packages survive stop and start), and makes its interpreter see them.
// The index is opened to the session for the length of the install when
// its own policy would not reach it.
func (d *Daemon) InstallPackages(ctx context.Context, id string, req *api.PackagesRequest, onEvent func(api.Event)) (*api.Execution, error) {
	if len(req.Packages) == 0 {
		return nil, errdefs.ErrInvalidArgument.WithMessage("packages is empty: name at least one, such as \"numpy==1.26.4\"")
	}
	u, err := checkPackages(&d.cfg, req.Packages, req.IndexURL)
	if err != nil {
		return nil, err
	}
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.net.owner == nil {
		return nil, api.Errorf(errdefs.ErrUnavailable, "packages need a network, which this daemon cannot give: %s", d.net.off)
	}
	closeIndex, err := d.net.openIndex(ctx, s, u, &d.cfg)
	if err != nil {
		return nil, err
	}
	defer closeIndex()
	e, err := d.Exec(ctx, id, pipRequest(&d.cfg, u, req.Packages, ""), onEvent)
	if err != nil || e.Status != api.StatusOK {
		return e, err
	}
	// The running interpreter finds the new packages without a restart.
	if sb := s.Sandbox(); sb != nil {
		if _, err := d.exec(ctx, s, &api.ExecRequest{Language: api.LanguagePython, Code: "import site as _s, importlib as _i\n_s.addsitedir(_s.getusersitepackages())\n_i.invalidate_caches()\ndel _s, _i"}, nil); err != nil {
			logging.From(ctx).Warn("make the interpreter see new packages", "session", id, "err", err)
		}
	}
	return e, nil
}

// checkPackages checks an install's requirements and index (the
// daemon's if index is ""), and says where it installs from.
func checkPackages(c *config.Config, pkgs []string, index string) (*url.URL, error) {
	if len(pkgs) > maxPackages {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "%d packages, more than %d in one install", len(pkgs), maxPackages)
	}
	for _, p := range pkgs {
		if !requirement.MatchString(p) {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "package %s is not a requirement pip takes here: a name, optional [extras] and version specifiers such as ==1.26.4 or >=2,<3", api.Quote(p))
		}
	}
	return packageIndex(c, index)
}

// packageIndex is where an install goes: index, or the daemon's if "".
func packageIndex(c *config.Config, index string) (*url.URL, error) {
	if index == "" {
		index = c.Network.PackageIndexURL
	}
	u, err := config.ParseIndexURL(index)
	if err != nil {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "index_url: %s", err.Error())
	}
	return u, nil
}

// pipRequest is the execution of an install, bounded by package_timeout_s:
// into the user's site folder, or into target (a folder of the sandbox).
func pipRequest(c *config.Config, index *url.URL, pkgs []string, target string) *api.ExecRequest {
	timeout := float64(min(c.Network.PackageTimeoutS, c.Max.TimeoutS))
	return &api.ExecRequest{Language: api.LanguageShell, Code: pipCommand(index, pkgs, target), TimeoutS: &timeout}
}

// pipCommand is the shell command of an install. Every word is quoted:
// the requirements, the URL and the target were checked to hold no quote.
func pipCommand(index *url.URL, pkgs []string, target string) string {
	dest := []string{"--user"}
	if target != "" {
		dest = []string{"--target", target}
	}
	words := append([]string{"exec", "python3", "-m", "pip", "install"}, dest...)
	words = append(words, "--no-input", "--no-cache-dir",
		"--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off", "--index-url", index.String())
	if index.Scheme == "http" {
		words = append(words, "--trusted-host", index.Hostname())
	}
	words = append(words, "--")
	words = append(words, pkgs...)
	for i, w := range words {
		words[i] = "'" + w + "'"
	}
	// Debian's python refuses installs outside a virtualenv (PEP 668),
	// even --user ones into /workspace; older pips ignore the variable.
	return "PIP_BREAK_SYSTEM_PACKAGES=1 " + strings.Join(words, " ")
}

// openIndex lets the session reach the index (and c's package hosts)
// until the returned func is called, if its policy does not already: a
// session without a network gets its link, with c's caps. The policy then in
// force (a PATCH meanwhile included) comes back.
func (n sessionNets) openIndex(ctx context.Context, s *session, index *url.URL, c *config.Config) (func(), error) {
	rec := s.Snapshot()
	p := policyOf(&rec)
	port := index.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[index.Scheme]
	}
	hosts := append([]string{net.JoinHostPort(index.Hostname(), port)}, c.Network.PackageHosts...)
	if reaches(p, index.Hostname(), port) {
		return func() {}, nil
	}
	sb := s.Sandbox()
	if sb == nil {
		return nil, api.Errorf(errdefs.ErrConflict, "session %s is not running: start it first", rec.ID)
	}
	temp := *p
	temp.Mode = netpolicy.ModeAllowlist
	temp.Entries = append([]netpolicy.Entry(nil), p.Entries...)
	if p.Mode == netpolicy.ModeNone {
		temp.Entries = nil
		temp.EgressKbps, temp.MaxConnections = c.Network.EgressKbps, c.Network.MaxConnections
	}
	for _, h := range hosts {
		// JoinHostPort brackets an IPv6 index, as an entry wants it.
		e, err := netpolicy.ParseEntry(h)
		if err != nil {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "the package index: %s", err.Error())
		}
		temp.Entries = append(temp.Entries, e)
	}
	if err := n.apply(ctx, s, sb, &temp); err != nil {
		return nil, err
	}
	logging.From(ctx).Info("package index opened to the session for an install", "session", rec.ID, "index", index.String())
	return func() {
		now := s.Snapshot()
		if err := n.apply(context.WithoutCancel(ctx), s, sb, policyOf(&now)); err != nil {
			logging.From(ctx).Error("close the package index to the session", "session", rec.ID, "err", err)
		}
	}, nil
}

// reaches reports whether policy p lets the sandbox reach host (a name
// or an address) on port.
func reaches(p *netpolicy.Policy, host, port string) bool {
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.Allows(a, uint16(n))
	}
	ports, ok := p.NamePorts(host)
	return ok && (ports == nil || slices.Contains(ports, uint16(n)))
}

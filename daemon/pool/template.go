package pool

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation"
)

// DefaultTemplate is the template every host has.
const DefaultTemplate = "python"

// maxPreloadBytes bounds a template's preload code (it travels as an
// argument of the sandbox's first process).
const maxPreloadBytes = 64 << 10

var templateName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// checkTemplateName refuses a name that could not be a template's (nor a
// folder's under the imports).
func checkTemplateName(name string) error {
	if !templateName.MatchString(name) {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad template name %s: use 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", api.Quote(name))
	}
	return nil
}

// parseTemplateRef splits an explicit reference "uid/name" (see
// api.TemplateRef); ok is false for a bare name. A reference of no
// canonical uid, or of no good name, names nothing: bad is set.
func parseTemplateRef(s string) (owner uint32, name string, ok, bad bool) {
	u, name, ok := strings.Cut(s, "/")
	if !ok {
		return 0, s, false, false
	}
	n, err := strconv.ParseUint(u, 10, 32)
	if err != nil || strconv.FormatUint(n, 10) != u || !templateName.MatchString(name) {
		return 0, "", true, true
	}
	return uint32(n), name, true, false
}

// templateFolder is the name of a template's folders on disk (its
// packages, its prepared image) for its reference: the reference with '@'
// for its '/', so that two owners' templates of one name never share one
// (names hold neither character). Root's keep their name.
func templateFolder(ref string) string { return strings.Replace(ref, "/", "@", 1) }

// folderRef is the reference of the template a folder is for.
func folderRef(folder string) string { return strings.Replace(folder, "@", "/", 1) }

// errNoTemplate is the answer for a template the caller cannot use.
func errNoTemplate(name string) error {
	return api.Errorf(errdefs.ErrNotFound, "no such template: %s (see sandboxctl template ls)", api.Quote(name))
}

// Template is one template the daemon knows: its definition as added, the
// root filesystem prepared for sandboxes, and its warm pool.
type Template struct {
	def api.Template
	// limits and runtime are its sessions' unless they ask for others
	// (the configured defaults with the template's over them).
	limits  api.Limits
	runtime string
	image   *isolation.Image // nil: the host's system folders
	pool    *Pool            // nil: no pool
	// broken, if set, says why no sandbox of it can start (its root
	// filesystem could not be opened at daemon start).
	broken string
	// adding is set while the template's first sandbox is tried: it is
	// not listed or usable yet.
	adding bool
	// packages is the host folder of its packages ("": none);
	// building is set while they are installed, in a sandbox that has
	// neither them nor the preload code yet.
	packages string
	building bool
	// lastErr is why the last pooled start failed.
	lastErr string
}

// Ref is the reference naming the template without doubt (see
// api.TemplateRef): its key in Templates.byName, in the store, and in the
// records of its sessions.
func (t *Template) Ref() string { return api.TemplateRef(t.def.OwnerUID, t.def.Name) }

// Def is its definition as added.
func (t *Template) Def() api.Template { return t.def }

// Image is the root filesystem prepared for its sandboxes; nil: the
// host's system folders.
func (t *Template) Image() *isolation.Image { return t.image }

// Boot is what its sandboxes run at their start: its preload code and
// the host folder of its packages; neither while its packages are
// installed (in a sandbox that has neither yet).
func (t *Template) Boot() (preload, packages string) {
	if t.building {
		return "", ""
	}
	return t.def.Preload, t.packages
}

// MetricLabel is the template's value of the metrics' template label:
// root's templates (everyone's) by name; every other user's together as
// "users", since /metrics is read by every caller and a user's template
// names are that user's to see (and each would be a series of its own).
func (t *Template) MetricLabel() string {
	if t.def.OwnerUID == 0 {
		return t.def.Name
	}
	return usersTemplatesLabel
}

// usersTemplatesLabel is the template label of every non-root user's
// templates in the metrics.
const usersTemplatesLabel = "users"

// folder names its folders on disk (see templateFolder).
func (t *Template) folder() string { return templateFolder(t.Ref()) }

// Limits are the limits sessions of the template get unless they ask for
// others.
func (t *Template) Limits() api.Limits { return t.limits }

// fill is its pool's size and how many of its sandboxes are ready. The
// caller holds Templates.mu.
func (t *Template) fill() api.PoolFill {
	f := api.PoolFill{Size: t.poolSize()}
	if t.pool != nil {
		f.Idle = t.pool.ready()
		f.Target = max(f.Size, int(t.pool.target.Load()))
	}
	return f
}

// poolSize is how many sandboxes its pool keeps at least.
func (t *Template) poolSize() int {
	if t.def.PoolSize == nil {
		return 0
	}
	return *t.def.PoolSize
}

// builtinTemplate is the python template: the host's Python, read-only.
func builtinTemplate(c *config.Config) api.Template {
	n := c.PoolSize
	return api.Template{
		Name:        DefaultTemplate,
		Description: "the host's python3, its system folders read-only",
		Rootfs:      api.RootfsHost,
		PoolSize:    &n,
		Builtin:     true,
	}
}

// view is the template as the API shows it: every limit set to what
// sessions get, and its pool's fill.
func (t *Template) view() api.Template {
	out := t.def
	out.Ref = t.Ref()
	l := t.limits
	out.Limits = &api.LimitDefaults{MemoryMB: &l.MemoryMB, CPUs: &l.CPUs, Pids: &l.Pids, DiskMB: &l.DiskMB, TimeoutS: &l.TimeoutS, IdleTimeoutS: &l.IdleTimeoutS}
	f := t.fill()
	out.PoolSize, out.PoolIdle = &f.Size, f.Idle
	out.Error = t.broken
	if out.Error == "" {
		out.Error = t.lastErr
	}
	return out
}

// Runtime is the runtime of the template's sessions that name none (its
// pool's, and its trial's): its own, else the daemon's default.
func (t *Template) Runtime() string { return t.runtime }

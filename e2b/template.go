package e2b

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// E2B's sandboxes run code as "user", at home in /home/user, where
// commands start and relative paths lead. The gateway's sandboxes are of
// a sandboxd template whose user is that one: the daemon shows the
// session's workspace at /home/user too, so the files E2B's SDKs name
// under /home/user (which the gateway asks the daemon for under
// /workspace, see files.go) are the ones code sees there.

// User is E2B's user, as a sandboxd template names it.
var User = api.TemplateUser{Name: "user", Home: home}

// BaseTemplate is the sandboxd template the gateway makes, unless one of
// the name is there, for E2B's "base" and "code-interpreter-v1" (unless
// the operator maps them to another).
const BaseTemplate = "e2b-base"

// Templates is what EnsureTemplate needs of the daemon.
type Templates interface {
	Template(ctx context.Context, name string) (*api.Template, error)
	AddTemplate(ctx context.Context, t *api.Template) (*api.Template, error)
}

// defaultTemplate is the daemon's template of sessions that name none,
// which the gateway's template copies (its root filesystem, runtime and
// pool size) with E2B's user.
const defaultTemplate = "python"

// EnsureTemplate makes template name, E2B's user's, unless the caller
// (or root) has one of that name already, and says its reference. One of
// another user is refused: its sandboxes would not be E2B's. The new
// template's warm pool is the daemon's default template's size, if the
// pools have room for it (else none, with a warning in log).
func EnsureTemplate(ctx context.Context, d Templates, name string, log *slog.Logger) (string, error) {
	t, err := d.Template(ctx, name)
	if err == nil {
		return e2bRef(t)
	}
	if !errdefs.IsNotFound(err) {
		return "", err
	}
	def, err := d.Template(ctx, defaultTemplate)
	if err != nil {
		return "", fmt.Errorf("the daemon's %s template: %w", defaultTemplate, err)
	}
	u := User
	req := &api.Template{
		Name: name, Description: "E2B's base and code-interpreter-v1 (sandboxctl e2b serve)",
		Rootfs: def.Rootfs, Runtime: def.Runtime, PoolSize: def.PoolSize, User: &u,
	}
	out, err := d.AddTemplate(ctx, req)
	if errdefs.IsResourceExhausted(err) && req.PoolSize != nil {
		log.Warn("the pools have no room for the E2B template's: its sandboxes start cold", "template", name, "error", err)
		req.PoolSize = nil
		out, err = d.AddTemplate(ctx, req)
	}
	if errdefs.IsConflict(err) {
		// Another gateway made it meanwhile.
		if t, err := d.Template(ctx, name); err == nil {
			return e2bRef(t)
		}
	}
	if err != nil {
		return "", fmt.Errorf("make the E2B template %s: %w", name, err)
	}
	log.Info("E2B template made", "template", out.Ref, "user", User.Name, "home", User.Home)
	return out.Ref, nil
}

// e2bRef is template t's reference if its user is E2B's.
func e2bRef(t *api.Template) (string, error) {
	if t.User == nil || *t.User != User {
		return "", fmt.Errorf("template %s exists with user %s: E2B's sandboxes need user %q at home in %s (remove it, or map E2B's templates to another with --template base=NAME)", t.Ref, userString(t.User), User.Name, User.Home)
	}
	return t.Ref, nil
}

func userString(u *api.TemplateUser) string {
	if u == nil {
		return `"sandbox" at /workspace`
	}
	return fmt.Sprintf("%q at %s", u.Name, u.Home)
}

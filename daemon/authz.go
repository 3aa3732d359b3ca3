package daemon

import (
	"context"
	"slices"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/identity"
)

// Authorization, in one place. Every rule of who may see or do what is a
// function of this file; the operations call them and nothing else
// compares uids. A caller the context does not name is nobody (package
// identity) and passes none of them.
//
//   - sessions: their owner, and root, see and manage them; to anyone
//     else they do not exist (not found, as a missing one).
//   - templates: root's (and the built-in one) are everyone's; another
//     user's are theirs alone, and not found to anyone else but root.
//     Names are per owner: a bare name is the caller's own template, else
//     root's, never another user's (pool.Templates.lookup); another's is named
//     only as "uid/name", by root or its owner (mayUseTemplate).
//   - volumes: their owner's, and root's; users the owner shared one with
//     see it and mount it (as "uid/name"), nothing more (mayMountVolume).
//   - root only: templates of a folder, root filesystem imports.
//   - warm pools: the pools of a user's templates together stay within
//     that user's share (pool_share_per_uid); root's templates (the
//     built-in one among them) are the operator's choice and count against
//     pool_max_total alone.

// caller wraps identity.Caller with the daemon's rules.
type caller struct{ identity.Caller }

// callerFrom is the caller of a request's context.
func callerFrom(ctx context.Context) caller { return caller{identity.From(ctx)} }

// mayUse reports whether the caller may see and manage what owner owns.
func (c caller) mayUse(owner uint32) bool { return c.IsRoot() || c.Owns(owner) }

// mayMountVolume reports whether the caller's sessions may mount (and the
// caller see) a volume of owner shared with sharedWith: the owner's, root's,
// and those of the users the owner named.
func (c caller) mayMountVolume(owner uint32, sharedWith []uint32) bool {
	return c.mayUse(owner) || (c.Known() && slices.Contains(sharedWith, c.UID))
}

// mayUseTemplate reports whether the caller may see and use a template of
// owner: root's templates are everyone's.
func (c caller) mayUseTemplate(owner uint32) bool { return owner == 0 || c.mayUse(owner) }

// hasPoolShare reports whether the caller's templates' warm pools are
// bounded by a per-user share: every caller's but root's.
func (c caller) hasPoolShare() bool { return !c.IsRoot() }

// inPoolShare reports whether a template of owner counts against the
// caller's share of the warm pool slots: the caller's own, unless the
// caller is root (whose templates are everyone's).
func (c caller) inPoolShare(owner uint32) bool { return c.hasPoolShare() && c.Owns(owner) }

// requireRoot refuses a root-only operation; what names it.
func (c caller) requireRoot(what string) error {
	if c.IsRoot() {
		return nil
	}
	return api.Errorf(errdefs.ErrPermissionDenied, "only root may %s", what)
}

// requireKnown refuses nobody: work must be someone's, and a session or
// template made for nobody would belong to uid 0.
func (c caller) requireKnown() error {
	if c.Known() {
		return nil
	}
	return errdefs.ErrPermissionDenied.WithMessage("the caller is unknown: connect over the Unix socket")
}

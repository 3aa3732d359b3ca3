package daemon

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestPoolSharePerUID: warm pool slots are shared fairly. A user's
// templates' pools together stay within pool_share_per_uid, so one user
// cannot take the slots another's template needs; root's pools (the
// python template's among them) are the operator's and count against
// pool_max_total alone, which bounds everyone.
func TestPoolSharePerUID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1; c.PoolMaxTotal = 12; c.PoolSharePerUID = 3 })
	d := e.start()
	alice, bob, carol := as(1000), as(2000), as(3000)

	add := func(ctx context.Context, name string, pool *int) error {
		t.Helper()
		_, err := d.Templates().AddTemplate(ctx, &api.Template{Name: name, PoolSize: pool})
		return err
	}
	mustAdd := func(ctx context.Context, name string, pool *int) {
		t.Helper()
		if err := add(ctx, name, pool); err != nil {
			t.Fatalf("add %s: %v", name, err)
		}
	}
	// refused checks a 429 whose message says each of says.
	refused := func(what string, err error, says ...string) {
		t.Helper()
		if !errdefs.IsResourceExhausted(err) {
			t.Fatalf("%s: %v, want resource_exhausted", what, err)
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("%s: %q does not say %q", what, err, s)
			}
		}
	}

	// Root's pools count against no one's share: 5 slots, over the share
	// of 3, are root's to give (python's 1 is root's too). 6 of 12 used.
	mustAdd(root, "shared", ptr(5))

	// Alice fills her share: 3 of 3 (9 of 12).
	mustAdd(alice, "a1", ptr(2))
	mustAdd(alice, "a2", ptr(1))
	err := add(alice, "a3", ptr(1))
	refused("alice past her share", err, "pool_share_per_uid (3", "uid 1000's templates keep 3 warm sandboxes", "a pool_size of 1", "raise pool_share_per_uid", "add it without a pool_size")
	if strings.Contains(err.Error(), "over pool_max_total") {
		t.Fatalf("alice's refusal blames the host's slots, 3 of which are free: %v", err)
	}
	refused("alice's huge pool", add(alice, "a3", ptr(math.MaxInt)), "pool_share_per_uid")
	// A template without a pool takes no slot.
	mustAdd(alice, "a3", nil)
	mustAdd(alice, "a4", ptr(0))
	// A re-add of a template under its name is a conflict (remove it
	// first), never a 429 that counts its old pool twice.
	if err := add(alice, "a1", ptr(1)); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("alice re-adds a1: %v, want a conflict", err)
	}

	// Bob is not crowded out by alice: his own share is whole (11 of 12).
	mustAdd(bob, "b1", ptr(2))
	// A pool bigger than what is left of a share is told what is left.
	refused("bob asks for more than he has left", add(bob, "b2", ptr(2)), "uid 2000's templates keep 2 warm sandboxes", "ask for a pool_size of at most 1")
	// The advice fits the host's room as well as the share (1 of 12 left).
	refused("carol past her share, the host nearly full", add(carol, "c1", ptr(4)), "uid 3000's templates keep 0 warm sandboxes", "ask for a pool_size of at most 1")
	mustAdd(bob, "b2", ptr(1)) // 12 of 12
	refused("carol past her share, the host full", add(carol, "c1", ptr(4)), "pool_max_total is used up too")

	// pool_max_total still bounds everyone: carol, within her share, and
	// root, who has none.
	refused("carol past the host's slots", add(carol, "c1", ptr(1)), "over pool_max_total (12)")
	refused("root past the host's slots", add(root, "r1", ptr(1)), "over pool_max_total (12)")
	refused("root's huge pool", add(root, "r1", ptr(math.MaxInt)), "over pool_max_total (12)")

	// Removing a template gives its slots back to its owner's share (the
	// way to change a pool_size: remove, add again).
	if err := d.Templates().DeleteTemplate(alice, "a1"); err != nil {
		t.Fatal(err)
	}
	mustAdd(alice, "a1", ptr(2))
	refused("alice past her share again", add(alice, "a5", ptr(1)), "pool_share_per_uid")

	info, err := d.Info(root)
	if err != nil || info.Pool.Size != 12 {
		t.Fatalf("pools keep %d slots in all, want 12: %v", info.Pool.Size, err)
	}

	// Owners outlive the daemon: the shares are the same after a restart.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	refused("alice after a restart", add(alice, "a5", ptr(1)), "uid 1000's templates keep 3 warm sandboxes")
	if err := d.Templates().DeleteTemplate(bob, "b2"); err != nil {
		t.Fatal(err)
	}
	mustAdd(bob, "b3", ptr(1))
}

// TestPoolShareDefault: with pool_share_per_uid unset, a user's share is
// half of pool_max_total, rounded up.
func TestPoolShareDefault(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.PoolMaxTotal = 5 })
	d := e.start()
	if _, err := d.Templates().AddTemplate(as(1000), &api.Template{Name: "a1", PoolSize: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	_, err := d.Templates().AddTemplate(as(1000), &api.Template{Name: "a2", PoolSize: ptr(1)})
	if !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "pool_share_per_uid (3") {
		t.Fatalf("past the default share: %v", err)
	}
	if _, err := d.Templates().AddTemplate(as(2000), &api.Template{Name: "b1", PoolSize: ptr(2)}); err != nil {
		t.Fatalf("another user: %v", err)
	}
}

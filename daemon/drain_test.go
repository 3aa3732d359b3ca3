package daemon

import (
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/node"
)

// TestDrain: a draining node refuses new sessions (503, Retry-After) and
// one-shot runs while its sessions run on; only root drains; the state
// outlives a restart until it is turned off.
func TestDrain(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))
	if _, err := d.node.Drain(as(1000), true); !errdefs.IsPermissionDenied(err) {
		t.Fatalf("a user's drain: %v", err)
	}
	n, err := d.node.Drain(root, true)
	if err != nil || n.State != api.NodeDraining {
		t.Fatalf("drain: %+v %v", n, err)
	}
	_, err = d.CreateSession(as(1000), &api.CreateSessionRequest{})
	if after, ok := api.RetryAfter(err); !errdefs.IsUnavailable(err) || !ok || after != node.DrainRetryAfter {
		t.Fatalf("a create while draining: %v (retry after %v)", err, after)
	}
	if _, err := d.Run(as(1000), &api.RunRequest{Language: api.LanguagePython, Code: "1"}, nil); !errdefs.IsUnavailable(err) {
		t.Fatalf("a run while draining: %v", err)
	}
	if r := mustExec(t, d, as(1000), s.ID, "x = 1"); r.Status != api.StatusOK {
		t.Fatalf("a running session while draining: %+v", r)
	}

	if err := d.Close(root); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if n, _ := d.node.Node(root); n.State != api.NodeDraining {
		t.Fatalf("after a restart: %s", n.State)
	}
	if n, err := d.node.Drain(root, false); err != nil || n.State != api.NodeReady {
		t.Fatalf("drain off: %+v %v", n, err)
	}
	mustCreate(t, d, as(1000))
}

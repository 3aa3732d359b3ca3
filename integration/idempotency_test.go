package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestIdempotencyKey: creates under one Idempotency-Key make one session
// (201, then 200 with the same session), from the API and from
// sandboxctl create --idempotency-key; another request under the key is
// a conflict.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	req := &api.CreateSessionRequest{Labels: map[string]string{"agent": "a1"}}
	first, created, err := d.c.CreateSessionOnce(ctx, req, "agent-a1-task-7")
	if err != nil || !created {
		t.Fatalf("first: %v %v", created, err)
	}
	again, created, err := d.c.CreateSessionOnce(ctx, req, "agent-a1-task-7")
	if err != nil || created || again.ID != first.ID || again.Status != api.StatusRunning {
		t.Fatalf("repeat: %+v %v %v", again, created, err)
	}
	if _, _, err := d.c.CreateSessionOnce(ctx, &api.CreateSessionRequest{}, "agent-a1-task-7"); err == nil || !strings.Contains(err.Error(), "another request") {
		t.Fatalf("another request under the key: %v", err)
	}
	if list, _ := d.c.ListSessions(ctx, nil); len(list) != 1 {
		t.Fatalf("%d sessions, want 1", len(list))
	}
	one, _, code := d.ctl(t, "", "create", "--idempotency-key", "cli-1")
	two, _, code2 := d.ctl(t, "", "create", "--idempotency-key", "cli-1")
	if code != 0 || code2 != 0 || one != two || len(strings.TrimSpace(one)) != 16 {
		t.Fatalf("sandboxctl create --idempotency-key twice: %q (%d) %q (%d)", one, code, two, code2)
	}
}

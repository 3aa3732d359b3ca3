package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestDeadline: a session created with deadline_s shows its deadline, a
// PATCH moves it, and once it passes the real daemon stops the session,
// workspace kept, saying why; bad values are 400. sandboxctl create and
// update --deadline drive the same.
func TestDeadline(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{DeadlineS: ptr(2)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.c.DeleteSession(ctx, s.ID) })
	if s.Deadline == nil || time.Until(*s.Deadline) > 3*time.Second {
		t.Fatalf("created with deadline_s 2: deadline %v", s.Deadline)
	}
	d.py(t, s.ID, "open('kept.txt', 'w').write('kept')")
	n := 3
	moved, err := d.c.UpdateSession(ctx, s.ID, api.UpdateSessionRequest{DeadlineS: &n})
	if err != nil || moved.Deadline == nil || moved.Deadline.Before(*s.Deadline) {
		t.Fatalf("PATCH deadline_s 3: %+v %v", moved, err)
	}
	for _, body := range []string{`{"deadline_s": -1}`, `{"deadline_s": 1.5}`, `{"deadline_s": 5, "other": 1}`} {
		code, b := d.raw(t, "PATCH", "/v1/sessions/"+s.ID, body)
		if code != 400 || !strings.Contains(string(b), `"invalid_argument"`) {
			t.Errorf("PATCH %s: %d %s", body, code, b)
		}
	}
	testutil.WaitFor(t, 20*time.Second, func() bool {
		got, err := d.c.GetSession(ctx, s.ID)
		return err == nil && got.Status == api.StatusStopped
	}, "session %s not stopped after its deadline", s.ID)
	got, _ := d.c.GetSession(ctx, s.ID)
	if !strings.Contains(got.Reason, "deadline") {
		t.Errorf("stopped with reason %q", got.Reason)
	}
	// Started again, it runs on (the passed deadline is gone), its files kept.
	if got, err = d.c.StartSession(ctx, s.ID); err != nil || got.Status != api.StatusRunning || got.Deadline != nil {
		t.Fatalf("start after the deadline: %+v %v", got, err)
	}
	if e := d.py(t, s.ID, "open('kept.txt').read()"); result(e) != "'kept'" {
		t.Fatalf("workspace after a deadline stop: %+v", e)
	}

	// sandboxctl: create --deadline, update --deadline, --json and inspect.
	ctl := func(args ...string) string {
		t.Helper()
		out, stderr, code := d.ctl(t, "", args...)
		if code != 0 {
			t.Fatalf("sandboxctl %v: exit %d: %s", args, code, stderr)
		}
		return out
	}
	var created api.Session
	if err := json.Unmarshal([]byte(ctl("create", "--deadline", "10m", "--json")), &created); err != nil || created.Deadline == nil {
		t.Fatalf("create --deadline 10m --json: %+v %v", created, err)
	}
	t.Cleanup(func() { _ = d.c.DeleteSession(ctx, created.ID) })
	if left := time.Until(*created.Deadline); left < 9*time.Minute || left > 11*time.Minute {
		t.Fatalf("create --deadline 10m: %v left", left)
	}
	if out := ctl("update", created.ID, "--deadline", "1h"); !strings.Contains(out, "deadline: ") || !strings.Contains(out, "(in ") {
		t.Fatalf("update --deadline 1h: %q", out)
	}
	var list []api.Session
	if err := json.Unmarshal([]byte(ctl("inspect", created.ID)), &list); err != nil || len(list) != 1 || list[0].Deadline == nil || time.Until(*list[0].Deadline) < 50*time.Minute {
		t.Fatalf("inspect after update: %+v %v", list, err)
	}
	var removed api.Session
	if err := json.Unmarshal([]byte(ctl("update", created.ID, "--deadline", "0", "--json")), &removed); err != nil || removed.Deadline != nil {
		t.Fatalf("update --deadline 0 --json: %+v %v", removed, err)
	}
	for _, args := range [][]string{{"update", created.ID, "--deadline", "soon"}, {"update", created.ID}, {"create", "--deadline", "0"}} {
		if _, stderr, code := d.ctl(t, "", args...); code == 0 || !strings.Contains(stderr, "deadline") {
			t.Errorf("sandboxctl %v: exit %d, %q", args, code, stderr)
		}
	}
}

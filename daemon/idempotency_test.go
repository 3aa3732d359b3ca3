package daemon

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestIdempotencyKey: a repeat of a create under the same key answers the
// first's session (created false), concurrent repeats make one session,
// also after a daemon restart; another request under the key is a
// conflict; another user's key is theirs; a deleted session frees its key;
// a bad key is refused.
func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	req := func() *api.CreateSessionRequest {
		return &api.CreateSessionRequest{Labels: map[string]string{"agent": "a1"}}
	}

	first, created, err := d.CreateSessionOnce(as(1000), req(), "k-1")
	if err != nil || !created {
		t.Fatalf("first: %v %v", created, err)
	}
	var wg sync.WaitGroup
	ids := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			s, created, err := d.CreateSessionOnce(as(1000), req(), "k-2")
			if err != nil {
				t.Error(err)
				return
			}
			if created {
				ids <- "new:" + s.ID
			} else {
				ids <- s.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	made, repeats := "", 0
	for id := range ids {
		if after, ok := strings.CutPrefix(id, "new:"); ok {
			if made != "" {
				t.Fatalf("concurrent creates under one key made %s and %s", made, after)
			}
			made = after
		} else {
			repeats++
		}
	}
	if made == "" || repeats != 7 {
		t.Fatalf("concurrent creates: made %q, %d repeats", made, repeats)
	}

	if s, created, err := d.CreateSessionOnce(as(1000), req(), "k-1"); err != nil || created || s.ID != first.ID {
		t.Fatalf("repeat: %+v %v %v", s, created, err)
	}
	if _, _, err := d.CreateSessionOnce(as(1000), &api.CreateSessionRequest{}, "k-1"); !errdefs.IsConflict(err) || !strings.Contains(err.Error(), first.ID) {
		t.Fatalf("another request under the key: %v", err)
	}
	if s, created, err := d.CreateSessionOnce(as(2000), req(), "k-1"); err != nil || !created || s.ID == first.ID {
		t.Fatalf("another user's key: %+v %v %v", s, created, err)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "has space", "é"} {
		if _, _, err := d.CreateSessionOnce(as(1000), req(), bad); !errdefs.IsInvalidArgument(err) {
			t.Errorf("key %q: %v", bad, err)
		}
	}

	// A restarted daemon finds the key in the record.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	if s, created, err := d.CreateSessionOnce(as(1000), req(), "k-1"); err != nil || created || s.ID != first.ID {
		t.Fatalf("repeat after a restart: %+v %v %v", s, created, err)
	}
	// A deleted session frees its key.
	if err := d.DeleteSession(as(1000), first.ID); err != nil {
		t.Fatal(err)
	}
	if s, created, err := d.CreateSessionOnce(as(1000), req(), "k-1"); err != nil || !created || s.ID == first.ID {
		t.Fatalf("after delete: %+v %v %v", s, created, err)
	}
}

package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// Idempotency-Key on create: an agent that retries after a timeout gets
// the session its first request made, not a second one. The key lives in
// the session's record (it outlives a daemon restart and goes with the
// session), for idempotencyTTL after the create.
const (
	idempotencyTTL    = 24 * time.Hour
	maxIdempotencyKey = 255
)

// creating are the keyed creates under way, by owner and key: a repeat
// waits for the first rather than racing it.
type creating struct {
	mu sync.Mutex
	m  map[nameKey]chan struct{}
}

// CreateSessionOnce is CreateSession under an Idempotency-Key (key "":
// none). It answers created false, and the session as it is now, when a
// create of the caller's with key made one within idempotencyTTL; a
// different request under the same key is a conflict.
func (d *Daemon) CreateSessionOnce(ctx context.Context, req *api.CreateSessionRequest, key string) (*api.Session, bool, error) {
	if key == "" {
		s, err := d.CreateSession(ctx, req)
		return s, err == nil, err
	}
	if err := checkIdempotencyKey(key); err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(b)
	mark := &store.Idempotency{Key: key, RequestSHA256: hex.EncodeToString(sum[:])}
	k := nameKey{owner: callerFrom(ctx).UID, name: key}
	for {
		d.creating.mu.Lock()
		if s := d.sessions.keyed(k, now().Add(-idempotencyTTL)); s != nil {
			d.creating.mu.Unlock()
			out := s.snapshot()
			if s.Snapshot().Idempotency.RequestSHA256 != mark.RequestSHA256 {
				return nil, false, api.Errorf(errdefs.ErrConflict, "Idempotency-Key %s made session %s with another request: use a new key for a new session", api.Quote(key), out.ID)
			}
			return &out, false, nil
		}
		wait := d.creating.m[k]
		if wait == nil {
			done := make(chan struct{})
			if d.creating.m == nil {
				d.creating.m = map[nameKey]chan struct{}{}
			}
			d.creating.m[k] = done
			d.creating.mu.Unlock()
			defer func() {
				d.creating.mu.Lock()
				delete(d.creating.m, k)
				d.creating.mu.Unlock()
				close(done)
			}()
			break
		}
		d.creating.mu.Unlock()
		select {
		case <-wait: // made (found next round), or failed (this one tries)
		case <-ctx.Done():
			return nil, false, api.Errorf(errdefs.ErrUnavailable, "a create with Idempotency-Key %s is still under way: try again", api.Quote(key))
		}
	}
	s, err := d.createSession(ctx, req, mark)
	if err != nil {
		return nil, false, err
	}
	out := s.snapshot()
	return &out, true, nil
}

// checkIdempotencyKey checks a key: 1 to 255 printable ASCII characters,
// as HTTP headers carry them.
func checkIdempotencyKey(key string) error {
	if len(key) > maxIdempotencyKey {
		return api.Errorf(errdefs.ErrInvalidArgument, "the Idempotency-Key is %d bytes: at most %d", len(key), maxIdempotencyKey)
	}
	for _, c := range []byte(key) {
		if c < 0x21 || c > 0x7e {
			return errdefs.ErrInvalidArgument.WithMessage("the Idempotency-Key must be printable ASCII without spaces (a UUID, say)")
		}
	}
	return nil
}

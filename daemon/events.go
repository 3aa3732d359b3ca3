package daemon

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// eventsKept bounds the events kept for replay (GET /v1/events?since=).
const eventsKept = 4096

// events is the daemon's event log: a bounded ring of recent events for
// replay, and the subscribers that stream new ones. Publishing never
// blocks on a slow subscriber: one that falls more than its buffer behind
// is cut off, and its stream ends.
type events struct {
	mu   sync.Mutex
	ring []eventEntry // oldest first, at most eventsKept
	subs map[*eventSub]struct{}
}

// eventEntry is an event with its session's owner, for who may see it.
type eventEntry struct {
	ev    api.SessionEvent
	owner uint32
}

type eventSub struct {
	ch   chan eventEntry
	gone chan struct{} // closed when the publisher cut it off
}

func newEvents() *events { return &events{subs: map[*eventSub]struct{}{}} }

// publish records ev and hands it to every subscriber.
func (e *events) publish(ev api.SessionEvent, owner uint32) {
	if ev.Time.IsZero() {
		ev.Time = now()
	}
	if ev.Type == "" {
		ev.Type = api.EventTypeSession
	}
	ent := eventEntry{ev: ev, owner: owner}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ring) == eventsKept {
		copy(e.ring, e.ring[1:])
		e.ring = e.ring[:eventsKept-1]
	}
	e.ring = append(e.ring, ent)
	for s := range e.subs {
		select {
		case s.ch <- ent:
		default:
			delete(e.subs, s)
			close(s.gone)
		}
	}
}

// Events streams the events the caller may see (its own sessions'; root:
// all) that match f, until ctx ends, f.Until passes, or send fails.
func (d *Daemon) Events(ctx context.Context, f api.EventFilter, send func(*api.SessionEvent) error) error {
	caller := callerFrom(ctx)
	match := func(ent eventEntry) bool {
		if !caller.mayUse(ent.owner) {
			return false
		}
		if len(f.Sessions) > 0 && !slices.Contains(f.Sessions, ent.ev.SessionID) {
			return false
		}
		if len(f.Types) > 0 && !slices.Contains(f.Types, ent.ev.Type) {
			return false
		}
		if !f.Since.IsZero() && ent.ev.Time.Before(f.Since) {
			return false
		}
		return f.Until.IsZero() || !ent.ev.Time.After(f.Until)
	}
	sub := &eventSub{ch: make(chan eventEntry, 256), gone: make(chan struct{})}
	e := d.events
	e.mu.Lock()
	var past []eventEntry
	if !f.Since.IsZero() {
		past = slices.Clone(e.ring)
	}
	e.subs[sub] = struct{}{}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.subs, sub)
		e.mu.Unlock()
	}()
	for _, ent := range past {
		if match(ent) {
			if err := send(&ent.ev); err != nil {
				return err
			}
		}
	}
	var until <-chan time.Time
	if !f.Until.IsZero() {
		t := time.NewTimer(time.Until(f.Until))
		defer t.Stop()
		until = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-until:
			return nil
		case <-sub.gone:
			return api.Errorf(errdefs.ErrResourceExhausted, "the event stream fell more than %d events behind and was cut off: reconnect with since", cap(sub.ch))
		case ent := <-sub.ch:
			if match(ent) {
				if err := send(&ent.ev); err != nil {
					return err
				}
			}
		}
	}
}

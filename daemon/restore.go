package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/agent"
	"github.com/sandboxd/sandboxd/store"
)

// restoreSessions takes back the sandboxes of sessions recorded as
// running, which a previous daemon left running (a restart) or could not
// stop (a crash). A session whose sandbox is gone is marked failed with the
// reason, and returned so that the caller can start it afresh if the
// config says so. It also returns the ids of the sandboxes taken back.
func (d *Daemon) restoreSessions(ctx context.Context) (restored map[string]bool, lost []*session) {
	restored = map[string]bool{}
	for id, s := range d.sessions {
		if s.rec.Status != api.StatusRunning {
			continue
		}
		sb, err := d.rt.Restore(ctx, d.sandboxSpec(s, s.rec))
		if err == nil {
			s.sb = sb
			restored[id] = true
			go d.watch(s, sb)
			d.log.Info("session restored", "session", id)
			continue
		}
		d.log.Warn("session lost: its sandbox did not survive", "session", id, "err", err)
		if err := d.rt.Cleanup(id); err != nil {
			d.log.Warn("remove what is left of a lost sandbox", "session", id, "err", err)
		}
		if s.rec.IDBase != 0 && (d.ids == nil || !d.ids.Holds(s.rec.IDBase)) {
			s.rec.IDBase = 0 // its ids are not ours any more
		}
		s.rec.Status = api.StatusFailed
		s.rec.Reason = fmt.Sprintf("its sandbox was gone when the daemon started (%v); start it again", err)
		if err := d.store.PutSession(s.rec); err != nil {
			d.log.Error("record lost session", "session", id, "err", err)
		}
		lost = append(lost, s)
	}
	return restored, lost
}

// restartLost starts afresh sessions whose sandbox was lost.
func (d *Daemon) restartLost(ctx context.Context, lost []*session) {
	for _, s := range lost {
		if err := d.restartSandbox(ctx, s); err != nil {
			d.log.Error("restart lost session", "session", s.rec.ID, "err", err)
		} else {
			d.log.Info("lost session started again", "session", s.rec.ID)
		}
	}
}

// recordUndelivered records an execution that ended while no daemon heard
// it: the daemon restarted or crashed during it. Its output is gone; how
// it ended is kept, under the status "lost".
func (d *Daemon) recordUndelivered(s *session, m *agent.Message) {
	id := m.ID
	if id == "" {
		id = newID()
	}
	how := fmt.Sprintf("it ended %s (exit code %d) after %.0f ms", m.Status, m.ExitCode, m.DurationMS)
	if m.Error != nil && m.Error.Name != "" {
		how += ", with " + m.Error.Name
	}
	if m.StateReset {
		how += ", and the interpreter was restarted"
	}
	e := &api.Execution{
		ID:         id,
		Language:   m.Language,
		Status:     api.StatusLost,
		ExitCode:   m.ExitCode,
		Result:     m.Result,
		StartedAt:  now().Add(-time.Duration(m.DurationMS * float64(time.Millisecond))),
		DurationMS: m.DurationMS,
		StateReset: m.StateReset,
		Error: &api.ExecError{Name: "DaemonRestarted",
			Value: "the daemon restarted while this execution ran, so its output was lost: " + how},
	}
	s.mu.Lock()
	e.SessionID = s.rec.ID
	s.rec.ExecCount++
	item := &store.Executed{SessionID: s.rec.ID, ExecCount: s.rec.ExecCount, LastUsedAt: s.rec.LastUsedAt, Execution: e}
	s.mu.Unlock()
	d.recorder.add(item)
	d.log.Warn("execution lost to a daemon restart recorded", "session", e.SessionID, "execution", id, "ended", m.Status)
}

package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation"
)

// TestHibernate: a runsc session's memory goes to disk and its sandbox
// away; an execution wakes it where it was (no state_reset), and so do a
// file call, start and resume; a hibernated session outlives a daemon
// restart; a stop drops its memory; a runc session, or one running a
// process beside the interpreter, answers 409 and runs on.
func TestHibernate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	ev := watchEvents(t, d)
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Runtime: api.RuntimeRunsc})
	if err != nil {
		t.Fatal(err)
	}
	sn := d.State().Snapshots
	mustExec(t, d, as(1000), s.ID, "x = 42")
	if _, err := sn.HibernateSession(as(1001), s.ID); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's hibernate: %v", err)
	}

	// A process beside the interpreter: refused, it runs on.
	refusedBesideProcess(t, d, s.ID, func() error {
		_, err := sn.HibernateSession(as(1000), s.ID)
		return err
	})
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.Result == nil || *r.Result != "42" {
		t.Fatalf("after a refused hibernate: %+v", r)
	}

	got, err := sn.HibernateSession(as(1000), s.ID)
	if err != nil || got.Status != api.StatusHibernated {
		t.Fatalf("hibernate: %+v %v", got, err)
	}
	ev.waitFor(t, s.ID, api.ActionHibernated)
	if e.h.box(s.ID) != nil {
		t.Fatal("a hibernated session's sandbox runs")
	}
	if info, _ := d.Info(as(1000)); info.Sessions.Hibernated != 1 {
		t.Fatalf("info: %+v", info.Sessions)
	}
	if again, err := sn.HibernateSession(as(1000), s.ID); err != nil || again.Status != api.StatusHibernated {
		t.Fatalf("hibernate a hibernated session: %+v %v", again, err)
	}

	// A restart keeps it hibernated; an execution wakes it.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	ev = watchEvents(t, d)
	sn = d.State().Snapshots
	if got, _ := d.GetSession(as(1000), s.ID); got.Status != api.StatusHibernated {
		t.Fatalf("after a restart: %+v", got)
	}

	if r := mustExec(t, d, as(1000), s.ID, "x"); r.StateReset || r.Result == nil || *r.Result != "42" {
		t.Fatalf("woken by an execution: %+v", r)
	}
	ev.waitFor(t, s.ID, api.ActionWoken)
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, "hibernated", s.ID)); !os.IsNotExist(err) {
		t.Fatalf("a woken session's image: %v", err)
	}

	// A file call wakes it; so do start and resume.
	for name, wake := range map[string]func() error{
		"a file call": func() error {
			_, err := d.Files().PutFile(as(1000), s.ID, "/workspace/a", strings.NewReader("a"))
			return err
		},
		"start":  func() error { _, err := d.StartSession(as(1000), s.ID); return err },
		"resume": func() error { _, err := d.ResumeSession(as(1000), s.ID); return err },
	} {
		if _, err := sn.HibernateSession(as(1000), s.ID); err != nil {
			t.Fatal(err)
		}
		if err := wake(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := d.GetSession(as(1000), s.ID); got.Status != api.StatusRunning || e.h.box(s.ID) == nil {
			t.Fatalf("after %s: %+v", name, got)
		}
	}
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.StateReset || r.Result == nil || *r.Result != "42" {
		t.Fatalf("after three wakes: %+v", r)
	}

	// A stop drops its memory; the next start is afresh.
	if _, err := sn.HibernateSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := d.StopSession(as(1000), s.ID); err != nil || got.Status != api.StatusStopped {
		t.Fatalf("stop a hibernated session: %+v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, "hibernated", s.ID)); !os.IsNotExist(err) {
		t.Fatalf("a stopped session's image: %v", err)
	}
	if _, err := d.StartSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.Error == nil {
		t.Fatalf("after a stop, x is still there: %+v", r)
	}

	// Deleted hibernated: its image goes too.
	if _, err := sn.HibernateSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, "hibernated", s.ID)); !os.IsNotExist(err) {
		t.Fatalf("a deleted session's image: %v", err)
	}

	// runc cannot.
	runc := mustCreate(t, d, as(1000))
	if _, err := sn.HibernateSession(as(1000), runc.ID); !errdefs.IsFailedPrecondition(err) {
		t.Fatalf("hibernate a runc session: %v", err)
	}
	mustExec(t, d, as(1000), runc.ID, "x = 1")
}

// TestIdleHibernate: idle_action hibernate hibernates an idle runsc
// session, and pauses one that cannot hibernate (runc).
func TestIdleHibernate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.IdleAction = config.IdleHibernate })
	d := e.start()
	ev := watchEvents(t, d)
	one := 1
	gv, err := d.CreateSession(as(1000), &api.CreateSessionRequest{IdleTimeoutS: &one, Runtime: api.RuntimeRunsc})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := d.CreateSession(as(1000), &api.CreateSessionRequest{IdleTimeoutS: &one})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.advance(2 * time.Second)
	ev.waitForAll(t, map[string]string{gv.ID: api.ActionHibernated, rc.ID: api.ActionPaused})
	if got, _ := d.GetSession(as(1000), gv.ID); got.Status != api.StatusHibernated {
		t.Fatalf("idle runsc session: %+v", got)
	}
}

// TestHibernatedAtCrash: a daemon killed once a session's memory was
// saved, before it recorded so, leaves the session hibernated for the
// next; a half-written image is removed.
func TestHibernatedAtCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	d := e.start()
	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Runtime: api.RuntimeRunsc})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, d, as(1000), s.ID, "x = 7")
	box := e.h.box(s.ID)
	dir := filepath.Join(e.cfg.DataDir, "hibernated", s.ID)
	if err := box.Checkpoint(context.Background(), filepath.Join(t.TempDir(), "m"), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := box.Checkpoint(context.Background(), filepath.Join(dir, snapshotMemory), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.cfg.DataDir, "hibernated", "half.new"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	box.die(isolation.ExitInfo{Known: true, Signal: 9})
	e.h.mu.Lock()
	delete(e.h.running, s.ID)
	e.h.mu.Unlock()
	d = e.start()
	if got, _ := d.GetSession(as(1000), s.ID); got.Status != api.StatusHibernated {
		t.Fatalf("after a crash with its memory saved: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, "hibernated", "half.new")); !os.IsNotExist(err) {
		t.Fatalf("a half-written image: %v", err)
	}
	if r := mustExec(t, d, as(1000), s.ID, "x"); r.StateReset || r.Result == nil || *r.Result != "7" {
		t.Fatalf("woken after a crash: %+v", r)
	}
}

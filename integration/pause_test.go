package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// TestPause: a paused session's processes stand still (a ticker in it
// stops writing) and its interpreter keeps its state; an execution resumes
// it; it stays paused across a daemon restart and a crash; sandboxctl
// pause and resume drive it; ls shows it paused.
func TestPause(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)
		d.py(t, id, "x = 7")
		// A ticker that outlives its execution writes the time a few
		// times a second.
		if e := d.sh(t, id, `nohup python3 -c '
import time
while True:
    open("/workspace/tick", "w").write(str(time.time()))
    time.sleep(0.05)
' >/dev/null 2>&1 &`); e.Status != api.StatusOK {
			t.Fatalf("ticker: %+v %s", e.Error, e.Stderr)
		}
		tick := filepath.Join(volume.Workspace(filepath.Join(d.dataDir, "sessions", id)), "tick")
		read := func() string {
			b, _ := os.ReadFile(tick)
			return string(b)
		}
		// ticking says whether the ticker wrote within wait: 600 ms
		// shows a paused one stands still; a running one is given 10 s,
		// as a thawed process in the emulated VM, beside other tests,
		// has once waited over 600 ms for a CPU.
		ticking := func(wait time.Duration) bool {
			before := read()
			for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				if read() != before {
					return true
				}
			}
			return false
		}
		const still, running = 600 * time.Millisecond, 10 * time.Second
		// Its python may take a while to start (the emulated VM: over
		// the 600 ms ticking waits).
		for deadline := time.Now().Add(30 * time.Second); read() == "" && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if !ticking(running) {
			t.Fatal("the ticker does not tick")
		}
		pausedStill := func(when string) {
			t.Helper()
			s, err := d.c.GetSession(ctx, id)
			if err != nil || s.Status != api.StatusPaused {
				t.Fatalf("%s: %+v %v", when, s, err)
			}
			if ticking(still) {
				t.Errorf("%s: the paused session's ticker ticks", when)
			}
		}

		out, errOut, code := d.ctl(t, "", "pause", id)
		if code != 0 {
			t.Fatalf("sandboxctl pause: %d %s %s", code, out, errOut)
		}
		pausedStill("paused")
		if out, _, _ := d.ctl(t, "", "ls"); !strings.Contains(out, "paused") {
			t.Errorf("ls: %s", out)
		}
		for _, how := range daemonEnds {
			d.bounce(how)
			pausedStill("after a daemon " + how)
		}

		// An execution resumes it, interpreter state intact.
		if e := d.py(t, id, "x"); e.Result == nil || *e.Result != "7" || e.StateReset {
			t.Fatalf("x after the pause: %+v", e)
		}
		if !ticking(running) {
			t.Error("the resumed session's ticker stands still")
		}
		if _, errOut, code := d.ctl(t, "", "pause", id); code != 0 {
			t.Fatal(errOut)
		}
		if _, errOut, code := d.ctl(t, "", "resume", id); code != 0 {
			t.Fatal(errOut)
		}
		if s, _ := d.c.GetSession(ctx, id); s.Status != api.StatusRunning || !ticking(running) {
			t.Errorf("after sandboxctl resume: %+v", s)
		}
		// Deleting a paused session leaves nothing (the harness checks).
		if _, err := d.c.PauseSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
}

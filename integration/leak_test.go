package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestNoLeaksAfterManyCycles creates, uses and deletes sessions a few
// hundred times, then checks the daemon holds no more fds, children or
// mounts than before, and no sandbox state is left anywhere.
func TestNoLeaksAfterManyCycles(t *testing.T) {
	cycles := 200
	if testing.Short() {
		cycles = 20
	}
	d := startDaemon(t, "")
	ctx := context.Background()
	cycle := func() string {
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if e, err := d.c.Exec(ctx, s.ID, &api.ExecRequest{Language: "python", Code: "import os\nx = os.getpid()"}, nil); err != nil || e.Status != api.StatusOK {
			t.Fatalf("exec: %+v %v", e, err)
		}
		if e, err := d.c.Exec(ctx, s.ID, &api.ExecRequest{Language: "shell", Code: "echo hi > /tmp/f; sleep 60 &"}, nil); err != nil || e.Status != api.StatusOK {
			t.Fatalf("shell: %+v %v", e, err)
		}
		if _, err := d.c.PutFile(ctx, s.ID, "data.txt", strings.NewReader("payload")); err != nil {
			t.Fatal(err)
		}
		if d.mounts(t) == 0 || d.loopDevices() == 0 {
			// The counts below would prove nothing.
			t.Fatalf("a live session shows %d mounts and %d loop devices of the daemon's", d.mounts(t), d.loopDevices())
		}
		if err := d.c.DeleteSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	for i := 0; i < 5; i++ { // warm up pools and caches
		cycle()
	}
	d.c.Close()
	before, mountsBefore, loopsBefore := statOf(t, d.cmd.Process.Pid), d.mounts(t), d.loopDevices()
	var ids []string
	for i := 0; i < cycles; i++ {
		ids = append(ids, cycle())
	}
	d.c.Close()
	after, mountsAfter, loopsAfter := statOf(t, d.cmd.Process.Pid), d.mounts(t), d.loopDevices()
	t.Logf("%d cycles: before %v; after %v; mounts %d -> %d; loop devices in use %d -> %d",
		cycles, before, after, mountsBefore, mountsAfter, loopsBefore, loopsAfter)
	if loopsAfter > loopsBefore {
		t.Errorf("loop devices in use grew from %d to %d:\n%s", loopsBefore, loopsAfter, d.loopHolders())
	}
	d.checkMountNS(t)
	if after.fds > before.fds+2 {
		t.Errorf("the daemon's fds grew from %d to %d", before.fds, after.fds)
	}
	if after.children != 0 {
		t.Errorf("the daemon has %d children left", after.children)
	}
	if mountsAfter > mountsBefore {
		t.Errorf("mounts grew from %d to %d", mountsBefore, mountsAfter)
	}
	if after.rssKB > before.rssKB+64<<10 {
		t.Errorf("the daemon's RSS grew by %d KiB", after.rssKB-before.rssKB)
	}
	assertNoSandboxesLeft(t, d, ids, false)
	if ents, _ := os.ReadDir(filepath.Join(d.base, "data", "sessions")); len(ents) != 0 {
		t.Errorf("%d session folders left in the data dir", len(ents))
	}
}

package integration

import (
	"strings"
	"testing"
)

// TestUndo: a session made with checkpoints goes back over its last
// executions from the CLI: a deleted variable comes back and a file
// written since goes; a shell execution's files go back alone; a daemon
// restart keeps the history; past what it keeps, and without
// checkpoints, undo says why.
func TestUndo(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		out, stderr, code := d.ctl(t, "", "create", "--checkpoints", "4")
		if code != 0 {
			t.Fatalf("create --checkpoints: %d %q", code, stderr)
		}
		s := strings.TrimSpace(out)
		d.py(t, s, "df = {'rows': list(range(100000))}")
		if x := d.py(t, s, "open('/workspace/new.txt', 'w').write('x'); del df"); x.Error != nil {
			t.Fatalf("del df: %+v", x)
		}
		if out, stderr, code := d.ctl(t, "", "undo", s); code != 0 || out != "went back 1 execution\n" {
			t.Fatalf("undo: %d %q %q", code, out, stderr)
		}
		if x := d.py(t, s, "len(df['rows'])"); x.Result == nil || *x.Result != "100000" || x.StateReset {
			t.Fatalf("df after the undo: %+v", x)
		}
		if x := d.sh(t, s, "ls /workspace"); x.Stdout != "" {
			t.Fatalf("/workspace after the undo: %+v", x)
		}
		// A shell execution: its files go back; the interpreter stays.
		d.py(t, s, "y = 7")
		if x := d.sh(t, s, "mkdir -p /workspace/d && echo hi > /workspace/d/sh.txt"); x.ExitCode != 0 {
			t.Fatalf("sh: %+v", x)
		}
		if _, stderr, code := d.ctl(t, "", "undo", s); code != 0 {
			t.Fatalf("undo of a shell execution: %d %q", code, stderr)
		}
		if x := d.sh(t, s, "ls -A /workspace"); x.Stdout != "" {
			t.Fatalf("/workspace after undoing the shell: %+v", x)
		}
		if x := d.py(t, s, "y"); x.Result == nil || *x.Result != "7" {
			t.Fatalf("y after undoing the shell: %+v", x)
		}
		// A daemon restart keeps the history, and the parked copies.
		d.py(t, s, "z = 1")
		d.bounce("restart")
		if _, stderr, code := d.ctl(t, "", "undo", s); code != 0 {
			t.Fatalf("undo after a daemon restart: %d %q", code, stderr)
		}
		if x := d.py(t, s, "z"); x.Error == nil || x.Error.Name != "NameError" {
			t.Fatalf("z after the undo: %+v", x)
		}
		if _, stderr, code := d.ctl(t, "", "undo", s, "--steps", "9"); code == 0 || !strings.Contains(stderr, "keeps") {
			t.Fatalf("undo past what it keeps: %d %q", code, stderr)
		}
		plain := d.session(t, nil)
		if _, stderr, code := d.ctl(t, "", "undo", plain); code == 0 || !strings.Contains(stderr, "keeps no checkpoints") {
			t.Fatalf("undo without checkpoints: %d %q", code, stderr)
		}
	})
}

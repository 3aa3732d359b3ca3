package integration

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestAttach: sandboxctl exec -i sends standard input to a command (a
// large one whole), and passes its exit status on; exec -it gives it a
// real terminal: through a pseudo-terminal of the test's, the python3 REPL
// sees a TTY of the size given, follows a resize, takes ^C as
// KeyboardInterrupt and ^D as the end; the session's state is untouched.
func TestAttach(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg, raced)
		id := d.session(t, nil)
		d.py(t, id, "x = 42")

		if out, stderr, code := d.ctl(t, "a\nb\nc\n", "exec", "-i", id, "--", "wc", "-l"); code != 0 || strings.TrimSpace(out) != "3" {
			t.Fatalf("exec -i wc -l: %d %q %q", code, out, stderr)
		}
		big := strings.Repeat("0123456789abcdef", 512<<10) // 8 MiB
		if out, stderr, code := d.ctl(t, big, "exec", "-i", id, "--", "wc", "-c"); code != 0 || strings.TrimSpace(out) != "8388608" {
			t.Fatalf("exec -i of 8 MiB: %d %q %q", code, out, stderr)
		}
		if out, stderr, code := d.ctl(t, "", "exec", "-i", id, "--", "sh", "-c", "echo out; echo err >&2; exit 5"); code != 5 || out != "out\n" || stderr != "err\n" {
			t.Fatalf("exec -i's streams and status: %d %q %q", code, out, stderr)
		}
		// runc refuses it before the upgrade (125), runsc exec after (its own status).
		if _, stderr, code := d.ctl(t, "", "exec", "-i", id, "--", "/no/such/command"); code == 0 || !strings.Contains(stderr, "/no/such/command") {
			t.Fatalf("exec -i of no command: %d %q", code, stderr)
		}

		// A client that leaves takes its command with it.
		gone := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "exec", "-i", id, "--", "sleep", "321")
		stdin, err := gone.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		if err := gone.Start(); err != nil {
			t.Fatal(err)
		}
		listed := func() bool {
			out, _, _ := d.ctl(t, "", "top", id, "--format", "{{.Command}}")
			return strings.Contains(out, "sleep") // runsc ps shows the name alone
		}
		waitFor(t, listed)
		_ = gone.Process.Kill()
		_ = gone.Wait()
		waitFor(t, func() bool { return !listed() })

		// -it through a pseudo-terminal.
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer ptmx.Close()
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "exec", "-it", id, "--", "python3", "-q")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		var mu sync.Mutex
		var screen bytes.Buffer
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := ptmx.Read(buf)
				mu.Lock()
				screen.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		// expect waits for want on the screen after what was seen so far.
		seen := 0
		expect := func(want string) {
			t.Helper()
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				s := screen.String()
				mu.Unlock()
				if i := strings.Index(s[seen:], want); i >= 0 {
					seen += i + len(want)
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%q not on the terminal:\n%s", want, s)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		typeIn := func(s string) {
			t.Helper()
			if _, err := ptmx.Write([]byte(s)); err != nil {
				t.Fatal(err)
			}
		}
		expect(">>> ")
		typeIn("import os, shutil; print(os.isatty(0), tuple(shutil.get_terminal_size()))\r")
		expect("True (100, 30)")
		expect(">>> ")
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
			t.Fatal(err)
		}
		// SIGWINCH goes to sandboxctl (the terminal's foreground); the
		// resize reaches the sandbox's terminal shortly after.
		for i := 0; ; i++ {
			typeIn("print('size', tuple(shutil.get_terminal_size()))\r")
			expect("size (")
			mu.Lock()
			ok := strings.HasPrefix(screen.String()[seen:], "120, 40)")
			mu.Unlock()
			expect(">>> ")
			if ok {
				break
			}
			if i == 50 {
				t.Fatalf("the resize did not reach the sandbox:\n%s", screen.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		typeIn("import time; time.sleep(60)\r")
		time.Sleep(500 * time.Millisecond)
		typeIn("\x03")
		expect("KeyboardInterrupt")
		expect(">>> ")
		// (Python leaves by SIGINT, status 130, when its last statement was
		// interrupted: one more first.)
		typeIn("print('after')\r")
		expect("after")
		expect(">>> ")
		typeIn("\x04")
		select {
		case err := <-done:
			done <- err
			if err != nil {
				t.Fatalf("sandboxctl exec -it after ^D: %v\n%s", err, screen.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("sandboxctl exec -it did not end at ^D:\n%s", screen.String())
		}
		if e := d.py(t, id, "x"); result(e) != "42" {
			t.Fatalf("the session's state after: %+v", e)
		}
	})
}

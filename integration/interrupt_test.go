package integration

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// startedCell prints "started" and sleeps; had it run to its end, it
// would have written /workspace/finished.
const startedCell = `import time
print("started", flush=True)
time.sleep(6)
open("/workspace/finished", "w").close()`

// TestInterrupt: POST …/interrupt stops the running cell (status
// interrupted, the session's state kept); a streaming client that hangs up
// interrupts its execution; Ctrl-C in sandboxctl exec interrupts it and
// exits 130, and a second Ctrl-C leaves at once, even from a command that
// ignores SIGINT.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg, raced)
		ctx := context.Background()
		id := d.session(t, nil)
		d.py(t, id, "x = 42")
		d.warmErrors(t, id)
		finished := func() bool {
			t.Helper()
			e := d.py(t, id, "import os; print(os.path.exists('/workspace/finished'))")
			return strings.TrimSpace(e.Stdout) == "True"
		}

		// The API's interrupt.
		started := make(chan struct{}, 1)
		done := make(chan *api.Execution, 1)
		go func() {
			e, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: startedCell}, func(ev api.Event) {
				if strings.Contains(ev.Data, "started") {
					started <- struct{}{}
				}
			})
			if err != nil {
				t.Error(err)
			}
			done <- e
		}()
		<-started
		if ok, err := d.c.Interrupt(ctx, id); !ok || err != nil {
			t.Fatalf("interrupt: %v %v", ok, err)
		}
		if e := <-done; e == nil || e.Status != api.StatusInterrupted || e.Error == nil || e.Error.Name != "KeyboardInterrupt" {
			t.Fatalf("the interrupted execution: %+v", e)
		}
		if ok, err := d.c.Interrupt(ctx, id); ok || err != nil {
			t.Errorf("an interrupt with nothing running: %v %v", ok, err)
		}

		// A streaming client that hangs up.
		hctx, hangUp := context.WithCancel(ctx)
		go func() {
			_, _ = d.c.Exec(hctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: startedCell}, func(ev api.Event) {
				if strings.Contains(ev.Data, "started") {
					hangUp()
				}
			})
		}()
		<-hctx.Done()
		start := time.Now()
		if finished() {
			t.Error("the cell of a client that hung up ran to its end")
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("the next execution waited %s for the abandoned one", took)
		}

		// Ctrl-C in sandboxctl exec, then Ctrl-C twice on a command that
		// ignores SIGINT.
		for _, tc := range []struct {
			name  string
			args  []string
			twice bool
			want  string // on stderr
		}{
			{"python", []string{"-c", startedCell}, false, "KeyboardInterrupt"},
			{"shell ignoring SIGINT", []string{"--shell", "-c", "trap '' INT; echo started; sleep 30; touch /workspace/finished"}, true, "left the execution"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cmd := exec.Command(filepath.Join(bin, "sandboxctl"), append([]string{"--socket", d.socket, "exec", id}, tc.args...)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if line, _ := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
					t.Fatalf("first line %q", line)
				}
				_ = cmd.Process.Signal(syscall.SIGINT)
				if tc.twice {
					time.Sleep(300 * time.Millisecond)
					_ = cmd.Process.Signal(syscall.SIGINT)
				}
				waited := make(chan error, 1)
				go func() { waited <- cmd.Wait() }()
				select {
				case err := <-waited:
					if cmd.ProcessState.ExitCode() != 130 || !strings.Contains(stderr.String(), tc.want) {
						t.Errorf("exit %d (%v), stderr:\n%s\nwant 130 and %q", cmd.ProcessState.ExitCode(), err, stderr.String(), tc.want)
					}
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatalf("sandboxctl did not end after Ctrl-C:\n%s", stderr.String())
				}
			})
		}
		if finished() {
			t.Error("an interrupted cell or command ran to its end")
		}
		if e := d.py(t, id, "x"); e.Result == nil || *e.Result != "42" {
			t.Errorf("x after the interrupts: %+v", e)
		}
	})
}

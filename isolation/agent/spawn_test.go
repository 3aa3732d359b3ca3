package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spawnPipes are a process's stdio for Spawn: the child's ends, given to
// the agent, and ours.
type spawnPipes struct {
	child     [3]*os.File
	in        *os.File
	out, errs *os.File
}

func newSpawnPipes(t *testing.T) *spawnPipes {
	t.Helper()
	var p spawnPipes
	var err error
	var ends [6]*os.File
	for i := 0; i < 3; i++ {
		if ends[2*i], ends[2*i+1], err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
	}
	p.child = [3]*os.File{ends[0], ends[3], ends[5]}
	p.in, p.out, p.errs = ends[1], ends[2], ends[4]
	t.Cleanup(func() {
		for _, f := range ends {
			f.Close()
		}
	})
	return &p
}

// spawn starts req in ra's agent; the child's ends are closed after.
func (ra *runningAgent) spawn(t *testing.T, req *SpawnRequest) (*Spawned, *spawnPipes, error) {
	t.Helper()
	p := newSpawnPipes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sp, err := Spawn(ctx, ra.spawnSock, req, p.child)
	for _, f := range p.child {
		f.Close()
	}
	if sp != nil {
		t.Cleanup(func() { sp.Close() })
	}
	return sp, p, err
}

func TestSpawn(t *testing.T) { bothSupervisors(t, testSpawn) }

func testSpawn(t *testing.T, sup string) {
	ra := startAgentOn(t, Files(), false, sup)
	env := []string{"PATH=/usr/bin:/bin", "GREETING=hello"}

	t.Run("output, input and exit code", func(t *testing.T) {
		sp, p, err := ra.spawn(t, &SpawnRequest{Argv: []string{"/bin/sh", "-c", `read x; echo "$GREETING $x from $(pwd)"; echo oops >&2; exit 3`}, Env: env, Cwd: ra.ws})
		if err != nil {
			t.Fatal(err)
		}
		if sp.PID <= 0 {
			t.Fatalf("pid %d", sp.PID)
		}
		p.in.WriteString("world\n")
		p.in.Close()
		out, _ := io.ReadAll(p.out)
		errs, _ := io.ReadAll(p.errs)
		code, err := sp.Wait()
		if err != nil || code != 3 {
			t.Fatalf("exit %d, %v", code, err)
		}
		if got, want := string(out), "hello world from "+ra.ws+"\n"; got != want {
			t.Errorf("stdout %q, want %q", got, want)
		}
		if string(errs) != "oops\n" {
			t.Errorf("stderr %q", errs)
		}
	})

	t.Run("an exit at once keeps its code", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			sp, _, err := ra.spawn(t, &SpawnRequest{Argv: []string{"/bin/sh", "-c", "exit 7"}, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			if code, err := sp.Wait(); err != nil || code != 7 {
				t.Fatalf("run %d: exit %d, %v", i, code, err)
			}
		}
	})

	t.Run("killed", func(t *testing.T) {
		sp, _, err := ra.spawn(t, &SpawnRequest{Argv: []string{"sleep", "60"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.Signal(unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code, err := sp.Wait(); err != nil || code != 137 {
			t.Fatalf("exit %d, %v", code, err)
		}
	})

	t.Run("a process while an execution runs", func(t *testing.T) {
		done := make(chan *Message, 1)
		go func() {
			m, _ := ra.conn.Exec(Request{ID: "slow", Code: "import time; time.sleep(1); 1", Timeout: 30}, time.Minute, func(string, string) {}, nil)
			done <- m
		}()
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		sp, p, err := ra.spawn(t, &SpawnRequest{Argv: []string{"echo", "beside"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(p.out)
		if code, err := sp.Wait(); err != nil || code != 0 || string(out) != "beside\n" {
			t.Fatalf("exit %d, %v, %q", code, err, out)
		}
		if d := time.Since(start); d > 700*time.Millisecond {
			t.Errorf("the process waited for the execution: %v", d)
		}
		if m := <-done; m == nil || m.Status != StatusOK {
			t.Fatalf("execution: %+v", m)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			req  *SpawnRequest
			want string
		}{
			{"no such command", &SpawnRequest{Argv: []string{"no-such-command-here"}, Env: env}, "no-such-command-here: No such file or directory"},
			{"no such folder", &SpawnRequest{Argv: []string{"true"}, Env: env, Cwd: filepath.Join(ra.ws, "missing")}, filepath.Join(ra.ws, "missing") + ": No such file or directory"},
			{"no command", &SpawnRequest{Argv: []string{}, Env: env}, "no command to run"},
			{"a NUL", &SpawnRequest{Argv: []string{"echo", "a\x00b"}, Env: env}, "null"},
		} {
			if _, _, err := ra.spawn(t, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
			}
		}
		// The agent answers on.
		sp, _, err := ra.spawn(t, &SpawnRequest{Argv: []string{"true"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if code, err := sp.Wait(); err != nil || code != 0 {
			t.Fatalf("exit %d, %v", code, err)
		}
	})

	t.Run("a daemon that hangs up lets it run", func(t *testing.T) {
		mark := filepath.Join(ra.ws, "mark")
		sp, _, err := ra.spawn(t, &SpawnRequest{Argv: []string{"/bin/sh", "-c", "sleep 0.3; echo done > " + mark}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		sp.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			b, err := os.ReadFile(mark)
			if err == nil && strings.TrimSpace(string(b)) == "done" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the process did not run on")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("an agent before 16 has no spawner", func(t *testing.T) {
		p := newSpawnPipes(t)
		_, err := Spawn(context.Background(), filepath.Join(t.TempDir(), "none.sock"), &SpawnRequest{Argv: []string{"true"}}, p.child)
		if !errors.Is(err, ErrNoSpawner) {
			t.Fatalf("%v, want ErrNoSpawner", err)
		}
	})
}

// TestSpawnLongLine: an argv of megabytes (Linux takes up to a quarter of
// the stack's limit) reaches the agent whole, over several writes.
func TestSpawnLongLine(t *testing.T) { bothSupervisors(t, testSpawnLongLine) }

func testSpawnLongLine(t *testing.T, sup string) {
	ra := startAgentOn(t, Files(), false, sup)
	argv := []string{"/bin/sh", "-c", `n=0; for a; do n=$((n + ${#a})); done; echo "$# $n"`, "_"}
	for range 15 {
		argv = append(argv, strings.Repeat("a", 120_000))
	}
	sp, p, err := ra.spawn(t, &SpawnRequest{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(p.out)
	if code, err := sp.Wait(); err != nil || code != 0 || string(out) != "15 1800000\n" {
		t.Fatalf("exit %d, %v, %q", code, err, out)
	}
}

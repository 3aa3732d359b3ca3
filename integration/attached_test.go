package integration

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// output follows an attached process's output from from until it ends,
// and returns its streams' text and exit code.
func output(t *testing.T, d *daemon, id string, pid int, from string) (streams map[string]string, exit *int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	streams = map[string]string{}
	err := d.c.ProcessOutput(ctx, id, pid, from, true, nil, func(o api.ProcessOutput) error {
		if o.ExitCode != nil {
			exit = o.ExitCode
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(o.DataB64)
		streams[o.Stream] += string(b)
		return err
	})
	if err != nil {
		t.Fatalf("output of %d: %v", pid, err)
	}
	return streams, exit
}

// TestAttachedProcesses: a process started with stdin or a terminal takes
// input, keeps stdout and stderr apart, is followed from its start or from
// now, resized, timed out and signalled, on each runtime.
func TestAttachedProcesses(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)

		p, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"sh", "-c", "echo err >&2; cat; exit 4"}, Stdin: true, Tag: "cat"})
		if err != nil || !p.Attached || p.PID <= 1 {
			t.Fatalf("start: %+v %v", p, err)
		}
		if err := d.c.WriteStdin(ctx, id, p.PID, []byte("hello\n"), false); err != nil {
			t.Fatal(err)
		}
		ps, err := d.c.Processes(ctx, id)
		found := false
		for _, x := range ps {
			found = found || (x.PID == p.PID && x.Attached && x.Tag == "cat" && len(x.Argv) == 3)
		}
		if err != nil || !found {
			t.Fatalf("the list: %+v %v", ps, err)
		}
		if err := d.c.WriteStdin(ctx, id, p.PID, []byte("bye\n"), true); err != nil {
			t.Fatal(err)
		}
		streams, exit := output(t, d, id, p.PID, "start")
		if streams["stdout"] != "hello\nbye\n" || streams["stderr"] != "err\n" || exit == nil || *exit != 4 {
			t.Fatalf("output: %q, exit %v", streams, exit)
		}
		if err := d.c.WriteStdin(ctx, id, p.PID, []byte("late"), false); !errdefs.IsConflict(err) {
			t.Fatalf("input to an ended process: %v", err)
		}

		// The agent started it (a fork of PID 1, not a runtime's exec,
		// whose processes have no parent in the sandbox), as the
		// sandbox's user, without capabilities, under the filter.
		p, err = d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"sh", "-c", "echo $PPID $(id -u); grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.c.WriteStdin(ctx, id, p.PID, nil, true); err != nil && !errdefs.IsConflict(err) {
			t.Fatal(err)
		}
		streams, exit = output(t, d, id, p.PID, "start")
		if exit == nil || *exit != 0 || !strings.HasPrefix(streams["stdout"], "1 1000\n") ||
			!strings.Contains(streams["stdout"], "CapEff:\t0000000000000000") || !strings.Contains(streams["stdout"], "Seccomp:\t2") {
			t.Fatalf("a process's parent, user and privileges: %q, exit %v", streams, exit)
		}
		// gVisor's /proc does not say NoNewPrivs.
		if rt == "runc" && !strings.Contains(streams["stdout"], "NoNewPrivs:\t1") {
			t.Fatalf("a process's no_new_privs: %q", streams["stdout"])
		}

		// A terminal: resized, then its size read by the command.
		tty, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"sh", "-c", "read x; stty size; echo \"$TERM\""}, TTY: &api.TermSize{Rows: 24, Cols: 80}})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.c.ResizeProcess(ctx, id, tty.PID, api.TermSize{Rows: 30, Cols: 100}); err != nil {
			t.Fatal(err)
		}
		if err := d.c.WriteStdin(ctx, id, tty.PID, []byte("go\n"), false); err != nil {
			t.Fatal(err)
		}
		streams, exit = output(t, d, id, tty.PID, "start")
		if !strings.Contains(streams["pty"], "30 100") || !strings.Contains(streams["pty"], "xterm") || exit == nil || *exit != 0 {
			t.Fatalf("terminal: %q, exit %v", streams, exit)
		}
		if err := d.c.ResizeProcess(ctx, id, p.PID, api.TermSize{Rows: 1, Cols: 1}); !errdefs.IsConflict(err) {
			t.Fatalf("resize without a terminal: %v", err)
		}

		// A timeout kills it; a follower from now sees at most what comes
		// after it asked, then the end.
		slow, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"sh", "-c", "echo early; sleep 60"}, Stdin: true, TimeoutS: 1})
		if err != nil {
			t.Fatal(err)
		}
		streams, exit = output(t, d, id, slow.PID, "now")
		if (streams["stdout"] != "" && streams["stdout"] != "early\n") || exit == nil || *exit != 137 {
			t.Fatalf("timed out: %q, exit %v", streams, exit)
		}

		// A signal ends one.
		sig, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"sleep", "60"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.c.SignalProcess(ctx, id, sig.PID, "TERM"); err != nil {
			t.Fatal(err)
		}
		if _, exit = output(t, d, id, sig.PID, "start"); exit == nil || *exit != 143 {
			t.Fatalf("signalled: exit %v", exit)
		}
		if err := d.c.ProcessOutput(ctx, id, 99999, "start", false, nil, func(api.ProcessOutput) error { return nil }); !errdefs.IsNotFound(err) {
			t.Fatalf("output of no process: %v", err)
		}

		// The same from sandboxctl: exec -d -i, stdin, logs -f.
		out, _, code := d.ctl(t, "", "exec", "-d", "-i", id, "--", "tr", "a-z", "A-Z")
		pid := strings.TrimSpace(out)
		if code != 0 || pid == "" {
			t.Fatalf("exec -d -i: %q %d", out, code)
		}
		if _, errOut, code := d.ctl(t, "", "stdin", id, pid, "hello "); code != 0 {
			t.Fatalf("stdin: %d %s", code, errOut)
		}
		if _, errOut, code := d.ctl(t, "from stdin\n", "stdin", "--eof", id, pid); code != 0 {
			t.Fatalf("stdin --eof: %d %s", code, errOut)
		}
		if out, errOut, code := d.ctl(t, "", "logs", "-f", id, pid); code != 0 || out != "HELLO FROM STDIN\n" || !strings.Contains(errOut, "exited with status 0") {
			t.Fatalf("logs -f: %q %q %d", out, errOut, code)
		}
	})
}

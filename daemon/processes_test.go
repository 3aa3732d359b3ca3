package daemon

import (
	"io"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/process"
)

// TestBackgroundProcess: a detached process is listed, its output read
// from its log (from an offset too), signalled to its end, which its log
// then says; the agent and unknown pids are refused; another user's
// session is not found.
func TestBackgroundProcess(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))
	p, err := d.Processes().StartProcess(as(1000), s.ID, &api.ProcessRequest{Argv: []string{"server", "--port", "8000"}})
	if err != nil || p.PID != 100 || !p.Detached {
		t.Fatalf("StartProcess = %+v, %v", p, err)
	}
	ps, err := d.Processes().Processes(as(1000), s.ID)
	if err != nil || len(ps) != 2 || ps[0].PID != 1 || ps[0].Detached || ps[1].PID != 100 || !ps[1].Detached {
		t.Fatalf("Processes = %+v, %v", ps, err)
	}
	read := func(offset int64) (string, bool, *int) {
		t.Helper()
		r, running, exit, err := d.Processes().ProcessLogs(as(1000), s.ID, 100, offset)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return string(b), running, exit
	}
	if out, running, exit := read(0); out != "server --port 8000\n" || !running || exit != nil {
		t.Fatalf("logs: %q %v %v", out, running, exit)
	}
	if out, _, _ := read(7); out != "--port 8000\n" {
		t.Fatalf("logs from 7: %q", out)
	}
	for _, tt := range []struct {
		pid    int
		signal string
		want   func(error) bool
	}{{1, "", errdefs.IsInvalidArgument}, {555, "", errdefs.IsNotFound}, {100, "NOPE", errdefs.IsInvalidArgument}} {
		if err := d.Processes().SignalProcess(as(1000), s.ID, tt.pid, tt.signal); !tt.want(err) {
			t.Errorf("signal %d %q: %v", tt.pid, tt.signal, err)
		}
	}
	if err := d.Processes().SignalProcess(as(2000), s.ID, 100, ""); !errdefs.IsNotFound(err) {
		t.Errorf("another user's: %v", err)
	}
	if err := d.Processes().SignalProcess(as(1000), s.ID, 100, "kill"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, running, exit := read(0)
		if !running && exit != nil && *exit == 137 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after kill: running %v exit %v", running, exit)
		}
	}
	if _, _, _, err := d.Processes().ProcessLogs(as(1000), s.ID, 42, 0); !errdefs.IsNotFound(err) {
		t.Errorf("logs of a process not started in the background: %v", err)
	}
	for _, argv := range [][]string{nil, {""}, {"a\x00"}} {
		if _, err := d.Processes().StartProcess(as(1000), s.ID, &api.ProcessRequest{Argv: argv}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("argv %q: %v", argv, err)
		}
	}
	for _, sig := range []string{"", "TERM", "sigint", "9", "HUP"} {
		if _, err := process.ParseSignal(sig); err != nil {
			t.Errorf("signal %q: %v", sig, err)
		}
	}
}

package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestInterrupt: an interrupt stops the execution under way, which answers
// status interrupted, and the session runs on with its variables; with
// nothing running it does nothing. Another user's session is not found,
// and a session whose agent is too old to interrupt is a conflict; their
// executions run on to their timeout.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		caller   context.Context
		running  bool // a "sleep" execution runs when the interrupt comes
		oldAgent bool
		timeoutS float64
		want     bool
		wantErr  func(error) bool
		status   string // how the execution ends
	}{
		{name: "running", caller: as(1000), running: true, timeoutS: 60, want: true, status: api.StatusInterrupted},
		{name: "by root", caller: root, running: true, timeoutS: 60, want: true, status: api.StatusInterrupted},
		{name: "nothing running", caller: as(1000)},
		{name: "another user's session", caller: as(2000), running: true, timeoutS: 0.3, wantErr: errdefs.IsNotFound, status: api.StatusTimeout},
		{name: "old agent", caller: as(1000), running: true, oldAgent: true, timeoutS: 0.3, wantErr: errdefs.IsConflict, status: api.StatusTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			d := e.start()
			s := mustCreate(t, d, as(1000))
			mustExec(t, d, as(1000), s.ID, "x = 5")
			box := e.h.box(s.ID)
			box.runMu.Lock()
			box.oldAgent = tt.oldAgent
			box.runMu.Unlock()
			type answer struct {
				e   *api.Execution
				err error
			}
			done := make(chan answer, 1)
			if tt.running {
				go func() {
					r, err := d.Exec(as(1000), s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "sleep", TimeoutS: ptr(tt.timeoutS)}, nil)
					done <- answer{r, err}
				}()
				testutil.WaitFor(t, 10*time.Second, box.sleeping, "the execution did not start")
			}
			got, err := d.Interrupt(tt.caller, s.ID)
			switch {
			case tt.wantErr == nil && err != nil, tt.wantErr != nil && !tt.wantErr(err):
				t.Fatalf("Interrupt: %v", err)
			case got != tt.want:
				t.Fatalf("Interrupt = %v, want %v", got, tt.want)
			}
			if tt.running {
				select {
				case a := <-done:
					if a.err != nil || a.e.Status != tt.status || a.e.StateReset {
						t.Fatalf("the execution answered %+v, %v; want status %s", a.e, a.err, tt.status)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the execution did not end")
				}
			}
			if r := mustExec(t, d, as(1000), s.ID, "x"); r.Result == nil || *r.Result != "5" {
				t.Fatalf("x after the interrupt: %+v", r)
			}
			if got, err := d.Interrupt(as(1000), s.ID); got || err != nil {
				t.Fatalf("Interrupt once the execution ended = %v, %v", got, err)
			}
		})
	}
}

// TestStreamHangUpInterrupts: a streaming client that hangs up interrupts
// its execution; one waiting for the whole answer leaves it to finish.
func TestStreamHangUpInterrupts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream bool
		status string
	}{
		{"streaming", true, api.StatusInterrupted},
		{"waiting", false, api.StatusTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			d := e.start()
			s := mustCreate(t, d, as(1000))
			box := e.h.box(s.ID)
			ctx, hangUp := context.WithCancel(as(1000))
			var on func(api.Event)
			if tc.stream {
				on = func(api.Event) {}
			}
			done := make(chan *api.Execution, 1)
			go func() {
				r, err := d.Exec(ctx, s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "sleep", TimeoutS: ptr(1.0)}, on)
				if err != nil {
					t.Error(err)
				}
				done <- r
			}()
			testutil.WaitFor(t, 10*time.Second, box.sleeping, "the execution did not start")
			hangUp()
			select {
			case r := <-done:
				if r == nil || r.Status != tc.status {
					t.Fatalf("the execution ended %+v, want %s", r, tc.status)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the execution did not end")
			}
		})
	}
}

package daemon

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestAttach relays frames between a client and a process: input in,
// output and error out, the exit status last; a client that hangs up
// ends the process; what cannot start or is malformed is refused before
// any upgrade.
func TestAttach(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start()
	s := mustCreate(t, d, as(1000))

	serve, err := d.Attach(as(1000), s.ID, &api.AttachRequest{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	client, daemonEnd := net.Pipe()
	go serve(daemonEnd)
	go func() {
		_ = api.WriteFrame(client, api.FrameStdin, []byte("hello "))
		_ = api.WriteFrame(client, api.FrameStdin, []byte("world"))
		_ = api.WriteFrame(client, api.FrameResize, api.ResizePayload(40, 100))
		_ = api.WriteFrame(client, api.FrameCloseStdin, nil)
	}()
	var out, errOut bytes.Buffer
	code := -1
	var buf []byte
	for code < 0 {
		typ, p, err := api.ReadFrame(client, buf)
		if err != nil {
			t.Fatalf("read: %v (out %q)", err, out.String())
		}
		switch typ {
		case api.FrameStdout:
			out.Write(p)
		case api.FrameStderr:
			errOut.Write(p)
		case api.FrameExit:
			code, _ = api.ParseExit(p)
		}
	}
	if out.String() != "HELLO WORLD" || errOut.String() != "bye\n" || code != 3 {
		t.Fatalf("relayed %q %q, exit %d", out.String(), errOut.String(), code)
	}
	if _, _, err := api.ReadFrame(client, nil); !errors.Is(err, io.EOF) {
		t.Fatalf("after the exit: %v, want the connection closed", err)
	}

	// A client that hangs up ends its process, and the session is free.
	serve, err = d.Attach(as(1000), s.ID, &api.AttachRequest{Argv: []string{"hang"}, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	client, daemonEnd = net.Pipe()
	done := make(chan struct{})
	go func() { serve(daemonEnd); close(done) }()
	client.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the process of a client that left runs on")
	}
	if r := mustExec(t, d, as(1000), s.ID, "x = 1"); r.Status != api.StatusOK {
		t.Fatalf("an exec after: %+v", r)
	}

	for _, tt := range []struct {
		name   string
		caller uint32
		req    api.AttachRequest
		want   func(error) bool
	}{
		{"no argv", 1000, api.AttachRequest{}, errdefs.IsInvalidArgument},
		{"NUL", 1000, api.AttachRequest{Argv: []string{"a\x00b"}}, errdefs.IsInvalidArgument},
		{"bad env", 1000, api.AttachRequest{Argv: []string{"cat"}, Env: map[string]string{"A=B": "1"}}, errdefs.IsInvalidArgument},
		{"cwd outside", 1000, api.AttachRequest{Argv: []string{"cat"}, Cwd: "/etc"}, errdefs.IsInvalidArgument},
		{"cannot start", 1000, api.AttachRequest{Argv: []string{"fail"}}, errdefs.IsInvalidArgument},
		{"another user's session", 2000, api.AttachRequest{Argv: []string{"cat"}}, errdefs.IsNotFound},
	} {
		if _, err := d.Attach(as(tt.caller), s.ID, &tt.req); !tt.want(err) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeAgent answers one request on the far end of a pipe with lines.
func fakeAgent(t testing.TB, lines string) *Conn {
	a, b := net.Pipe()
	go func() {
		defer b.Close()
		r := bufio.NewReader(b)
		if _, err := r.ReadString('\n'); err != nil {
			return
		}
		_, _ = b.Write([]byte(lines))
	}()
	t.Cleanup(func() { a.Close() })
	return &Conn{c: a, lines: newLineReader(a, 1<<20)}
}

func TestExecProtocol(t *testing.T) {
	c := fakeAgent(t, `{"type":"stdout","data":"a"}`+"\n"+`{"type":"display","output":{"mime":"text/html","data":"PGI+","bundle":{"text/html":"<b>","text/plain":"b"}}}`+"\n"+
		`{"type":"stderr","data":"b"}`+"\n"+`{"type":"display"}`+"\n"+`{"type":"done","status":"ok","result":"1"}`+"\n")
	var out []string
	m, err := c.Exec(Request{Language: "python", Code: "1"}, time.Second, func(k, d string) { out = append(out, k+":"+d) },
		func(o Output) { out = append(out, "display:"+o.MIME+":"+o.Bundle["text/html"]) })
	if err != nil || m.Status != "ok" || *m.Result != "1" || strings.Join(out, ",") != "stdout:a,display:text/html:<b>,stderr:b" {
		t.Fatalf("%+v %v %v", m, out, err)
	}
}

// TestPingVersion: a pong tells the agent's protocol version, none is
// version 1, and a version out of the daemon's range is refused.
func TestPingVersion(t *testing.T) {
	for _, tc := range []struct {
		pong    string
		version int
		err     error
	}{
		{`{"type":"pong","pid":1}`, 1, nil},
		{`{"type":"pong","pid":1,"protocol":2}`, 2, nil},
		{fmt.Sprintf(`{"type":"pong","pid":1,"protocol":%d}`, ProtocolVersion), ProtocolVersion, nil},
		{fmt.Sprintf(`{"type":"pong","pid":1,"protocol":%d}`, ProtocolVersion+1), ProtocolVersion + 1, ErrProtocol},
		{`{"type":"pong","pid":1,"protocol":-1}`, -1, ErrProtocol},
	} {
		c := fakeAgent(t, tc.pong+"\n")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Ping(ctx, false)
		cancel()
		if !errors.Is(err, tc.err) || c.Version() != tc.version {
			t.Errorf("%s: Version() = %d, err %v; want %d, %v", tc.pong, c.Version(), err, tc.version, tc.err)
		}
	}
}

func TestExecAgentSilent(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = bufio.NewReader(b).ReadString('\n') }() // reads, never answers
	c := &Conn{c: a, lines: newLineReader(a, 1<<20)}
	if _, err := c.Exec(Request{}, 100*time.Millisecond, func(string, string) {}, nil); err != ErrUnresponsive {
		t.Fatalf("got %v, want ErrUnresponsive", err)
	}
}

// FuzzAgentLines feeds arbitrary agent output to the daemon's reader, as
// the answer to an execution and to a ping: it may fail, never panic or
// hang, and never accept a protocol version it does not speak.
func FuzzAgentLines(f *testing.F) {
	for _, s := range []string{
		`{"type":"done","status":"ok"}` + "\n",
		`{"type":"stdout","data":"x"}` + "\n" + `{"type":"done"}` + "\n",
		`{"type":"error","message":"m"}` + "\n",
		"garbage\n", `{"type":"stdout","data":1}` + "\n", "", `{"type":"done","outputs":[{"mime":1}]}` + "\n",
		`{"type":"pong","pid":1}` + "\n", `{"type":"pong","protocol":2}` + "\n", `{"type":"pong","protocol":"2"}` + "\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lines string) {
		c := fakeAgent(t, lines)
		_, _ = c.Exec(Request{Language: "python"}, time.Second, func(string, string) {}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c = fakeAgent(t, lines)
		if _, err := c.Ping(ctx, false); err == nil && (c.Version() < MinProtocolVersion || c.Version() > ProtocolVersion) {
			t.Fatalf("Ping accepted protocol version %d", c.Version())
		}
	})
}

// TestInterruptWaitsForItsRequest: an interrupt sent as its execution is
// marked running, before Exec writes the request, reaches the agent after
// the request (an agent drops an interrupt that finds it idle); one for an
// execution whose request never comes is sent after sentWait.
func TestInterruptWaitsForItsRequest(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &Conn{c: a, lines: newLineReader(a, 1<<20)}
	c.version.Store(ProtocolVersion)
	got := make(chan string, 2)
	go func() {
		r := bufio.NewReader(b)
		for range 2 {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			got <- line
		}
		_, _ = b.Write([]byte(`{"type":"done","status":"interrupted"}` + "\n"))
	}()
	sent := make(chan error, 1)
	go func() { sent <- c.Interrupt(context.Background(), "e1") }()
	time.Sleep(50 * time.Millisecond) // the interrupt is waiting
	if _, err := c.Exec(Request{ID: "e1", Language: "python", Code: "1"}, 5*time.Second, func(string, string) {}, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	first, second := <-got, <-got
	if !strings.Contains(first, `"op":"exec"`) || !strings.Contains(second, `"op":"interrupt"`) {
		t.Fatalf("the agent read %q then %q; want the execution, then its interrupt", first, second)
	}

	// An id never sent: Interrupt waits sentWait, then sends it anyway.
	go func() { _, _ = bufio.NewReader(b).ReadString('\n') }()
	t0 := time.Now()
	if err := c.Interrupt(context.Background(), "e2"); err != nil || time.Since(t0) < sentWait {
		t.Fatalf("Interrupt of an execution never sent: %v after %v", err, time.Since(t0))
	}
	// A cancelled context ends the wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Interrupt(ctx, "e3"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Interrupt with a cancelled context: %v", err)
	}
}

package integration

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// TestSystemdNotify runs the daemon as a Type=notify unit with a watchdog
// would: READY=1 once the API serves, STATUS= lines with the sessions and
// pools, WATCHDOG=1 at half the interval, STOPPING=1 at shutdown. None of
// systemd's variables reach a sandbox.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 100)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := conn.Read(b)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(b[:n])
		}
	}()
	next := func(want string) string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("notify socket closed waiting for %q", want)
				}
				if strings.Contains(m, want) {
					return m
				}
			case <-deadline:
				t.Fatalf("no %q from the daemon", want)
			}
		}
	}
	d := startDaemon(t, "", func(d *daemon) {
		d.env = []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=1000000"}
	})
	if m := next("READY=1"); !strings.Contains(m, "STATUS=0 sessions running") {
		t.Errorf("ready message: %q", m)
	}
	id := d.session(t, nil)
	if m := next("1 sessions running"); !strings.Contains(m, "WATCHDOG=1") {
		t.Errorf("status message without the watchdog: %q", m)
	}
	e := d.sh(t, id, "env")
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_", "LISTEN_", "INVOCATION_ID", "JOURNAL_STREAM"} {
		if strings.Contains(e.Stdout, v) {
			t.Errorf("%s reached the sandbox:\n%s", v, e.Stdout)
		}
	}
	_ = d.c.DeleteSession(context.Background(), id)
	d.terminate()
	next("STOPPING=1")
	d.launch() // for the cleanup's checks
}

// TestSocketActivation passes the API socket as systemd's sandboxd.socket
// does: the daemon serves it, keeps LISTEN_* out of sandboxes, and leaves
// the socket file to systemd when it stops.
func TestSocketActivation(t *testing.T) {
	t.Parallel()
	var lf *os.File
	d := startDaemon(t, "", func(d *daemon) {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.socket, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		if lf, err = l.File(); err != nil {
			t.Fatal(err)
		}
		l.Close()
		d.listener = lf
	})
	defer lf.Close()
	// The daemon says how it got its socket once it serves it: a client
	// may be answered before that line is written (the VM's run saw it).
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.log(), `"socket_activated"`) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(d.log(), `"socket_activated":true`) {
		t.Fatalf("the daemon made its own socket:\n%s", d.log())
	}
	id := d.session(t, &api.CreateSessionRequest{})
	if e := d.sh(t, id, "env"); strings.Contains(e.Stdout, "LISTEN_") {
		t.Errorf("LISTEN_* reached the sandbox:\n%s", e.Stdout)
	}
	_ = d.c.DeleteSession(context.Background(), id)
	d.terminate()
	if fi, err := os.Stat(d.socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the activated socket was removed at shutdown: %v", err)
	}
	// The socket still accepts: a next daemon (systemd starts one on the
	// next connection) takes it over.
	c, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatalf("the activated socket no longer accepts: %v", err)
	}
	c.Close()
	d.launch()
	if err := d.c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
}

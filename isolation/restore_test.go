package isolation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// TestKeptUnconnected: a restored sandbox whose agent cannot be connected
// to yet is kept when its socket is there with a full backlog or its
// agent is busy; a missing or refusing socket keeps it only where the
// agent makes its own socket (runsc); anything else lets it go. The
// errors are agent.Dial's own, after its ctx ran out: it once reported
// every socket it gave up on as "i/o timeout", and a runsc sandbox whose
// agent was not listening yet was destroyed for it.
func TestKeptUnconnected(t *testing.T) {
	dir := t.TempDir()
	dial := func(path string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		c, err := agent.Dial(ctx, path)
		if err == nil {
			c.Close()
			return errors.New("connected")
		}
		return err
	}

	full := filepath.Join(dir, "full")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: full}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // never accepts
		t.Fatal(err)
	}
	for range 4 { // fill the backlog
		if c, err := net.Dial("unix", full); err == nil {
			defer c.Close()
		}
	}
	refusing := filepath.Join(dir, "refusing")
	l, err := net.Listen("unix", refusing)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()

	for _, c := range []struct {
		name               string
		err                error
		kept, keptListened bool
	}{
		{"full backlog", dial(full), true, true},
		{"unresponsive", fmt.Errorf("ping: %w", agent.ErrUnresponsive), true, true},
		{"missing", dial(filepath.Join(dir, "none")), false, true},
		{"refusing", dial(refusing), false, true},
		{"other", errors.New("protocol 3 not spoken"), false, false},
	} {
		if got := keptUnconnected(c.err, false); got != c.kept {
			t.Errorf("%s (%v): kept %v, want %v", c.name, c.err, got, c.kept)
		}
		if got := keptUnconnected(c.err, true); got != c.keptListened {
			t.Errorf("%s (%v), agent listens: kept %v, want %v", c.name, c.err, got, c.keptListened)
		}
	}
}

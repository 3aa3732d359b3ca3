package isolation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NetNS opens the sandbox's network namespace (its init's), for the
// daemon to plumb a network into. The caller closes it.
func (s *Sandbox) NetNS() (*os.File, error) {
	pid, started, err := s.c.InitProcess()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s network namespace: %w", s.id, err)
	}
	// The file is the init's if the pid still is: it is, if the process of
	// that pid started when the init did.
	if start, err := StartTime(pid); err != nil || start != started {
		f.Close()
		return nil, fmt.Errorf("sandbox %s: its init exited", s.id)
	}
	return f, nil
}

// NewNetNS makes a network namespace with only lo, for a sandbox whose
// network must be there before it starts: gVisor takes the links of its
// namespace when runsc creates the sandbox, and sees none added later.
// The namespace lives while the file is open, or a process is in it.
func (r *Runtime) NewNetNS() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread dies with the goroutine instead of
		// going back to serve others from the new namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("new network namespace: %w", err)}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		ch <- result{f, err}
	}()
	res := <-ch
	return res.f, res.err
}

// NetNSPath is a path of the namespace file f that another process (runsc)
// can open while the daemon holds f.
func NetNSPath(f *os.File) string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
}

// StartTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks after boot.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) may hold spaces and parentheses: fields count
	// from after its last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// DialPort connects to TCP port on the sandbox's loopback (127.0.0.1, then
// ::1), with a socket made in its network namespace: whatever its network
// policy, a server inside is reachable to the daemon and to nothing else.
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	if d, ok := s.c.(PortDialer); ok {
		return d.DialPort(ctx, port) // gVisor's loopback is its own
	}
	ns, err := s.NetNS()
	if err != nil {
		return nil, err
	}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer ns.Close()
		// Never unlocked: the thread dies with the goroutine instead of
		// going back to serve others from the sandbox's namespace.
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("enter sandbox %s's network namespace: %w", s.id, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if errors.Is(err, unix.ECONNREFUSED) {
			c, err = d.DialContext(ctx, "tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
			if err != nil && !errors.Is(err, unix.ECONNREFUSED) {
				err = unix.ECONNREFUSED // no IPv6 in the sandbox: the IPv4 answer stands
			}
		}
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

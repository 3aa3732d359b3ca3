package runsc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// portBridge is the helper a runsc sandbox's port proxy runs inside, with
// `runsc exec`: it connects to the port on gVisor's loopback (127.0.0.1,
// then ::1) and carries bytes both ways between that connection and its
// stdin, one end of a socket pair of the daemon's. Its first byte says
// whether it connected (0) or nothing listened (1). The host cannot reach
// gVisor's loopback (the netstack is the Sentry's, not the kernel's), as
// it reaches a runc sandbox's from inside its namespace.
const portBridge = `import socket, sys, threading
port = int(sys.argv[1])
host = socket.socket(fileno=0)
conn = None
for addr in ("127.0.0.1", "::1"):
    try:
        conn = socket.create_connection((addr, port), timeout=10)
        break
    except OSError:
        pass
if conn is None:
    host.sendall(b"\x01")
    sys.exit(0)
conn.settimeout(None)
host.sendall(b"\x00")
def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
t = threading.Thread(target=pump, args=(host, conn), daemon=True)
t.start()
pump(conn, host)
t.join()
`

// DialPort connects to TCP port on the sandbox's loopback through a
// portBridge run inside as the agent's user: the connection is a socket
// pair whose far end the bridge holds. runsc exec waits for the bridge
// and ends with it, when either side closes.
func (c *gvisorContainer) DialPort(ctx context.Context, port int) (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "port"), os.NewFile(uintptr(fds[1]), "port-bridge")
	defer theirs.Close()
	// The exec lives as long as the connection: not bound to ctx, which
	// is the dial's.
	cmd := c.rs.command(context.Background(), c.network, "exec",
		"--user", fmt.Sprintf("%d:%d", c.user.UID, c.user.GID), "--cwd", "/",
		c.id, c.python, "-S", "-c", portBridge, strconv.Itoa(port))
	cmd.Stdin, cmd.Stdout = theirs, theirs
	if err := cmd.Start(); err != nil {
		mine.Close()
		return nil, fmt.Errorf("runsc exec the port bridge: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	deadline := time.Now().Add(runscTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	var status [1]byte
	_, err = io.ReadFull(conn, status[:])
	stop()
	_ = conn.SetReadDeadline(time.Time{})
	switch {
	case err != nil && ctx.Err() != nil:
		err = ctx.Err()
	case err != nil:
		err = fmt.Errorf("the port bridge in sandbox %s: %w", c.id, err)
	case status[0] != 0:
		err = syscall.ECONNREFUSED
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

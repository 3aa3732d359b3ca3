package mcpgateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/internal/version"
)

// serverPath is a server command's PATH: the system's folders.
const serverPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// terminateAfter is how long a server command has to exit once its stdin
// closes, and again after SIGTERM, before it is killed.
const terminateAfter = time.Second

// upstream is one session's connection to one server, made at its first
// call and made again after one broke or timed out: a session never shares
// a server's process (or HTTP session) with another, so no state of one
// reaches the other through it.
type upstream struct {
	name    string
	srv     config.MCPServer
	session string
	log     *slog.Logger

	mu sync.Mutex // held while connecting
	cs *mcp.ClientSession
	// proc is a command server's process, ended with the connection.
	proc   *exec.Cmd
	closed bool
}

var errClosed = errors.New("the session's MCP gateway is closed")

// client returns the connection, connecting first if there is none.
func (u *upstream) client(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, errClosed
	}
	if u.cs != nil {
		return u.cs, nil
	}
	var (
		t    mcp.Transport
		proc *exec.Cmd
	)
	if u.srv.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: u.srv.URL, HTTPClient: &http.Client{}, MaxRetries: -1, DisableStandaloneSSE: true}
	} else {
		var err error
		if t, proc, err = u.start(); err != nil {
			return nil, err
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "sandboxd-mcp-gateway", Version: version.Version}, nil)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		if proc != nil {
			endProcess(proc)
		}
		return nil, err
	}
	u.cs, u.proc = cs, proc
	return cs, nil
}

// start starts the server's command: its own process group, none of the
// daemon's environment, not root unless the config says so, killed if the
// daemon dies.
func (u *upstream) start() (mcp.Transport, *exec.Cmd, error) {
	cmd := exec.Command(u.srv.Command[0], u.srv.Command[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{serverPath}
	for k, v := range u.srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cred, err := credential(u.srv)
	if err != nil {
		return nil, nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	cmd.Stderr = &stderrLog{log: u.log.With("mcp_server", u.name, "session", u.session)}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	onSpawnThread(func() { err = cmd.Start() })
	if err != nil {
		return nil, nil, err
	}
	// An answer over the cap is refused whole (too_large); one far over it
	// breaks the connection instead of filling the daemon's memory.
	maxLine := int(2*u.srv.AnswerMax()) + 1<<20
	return &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: maxLine}, cmd, nil
}

// drop ends cs if it is still the connection: the next call connects
// anew (a server that hung, or whose connection broke).
func (u *upstream) drop(cs *mcp.ClientSession) {
	u.mu.Lock()
	if u.cs != cs {
		u.mu.Unlock()
		return
	}
	proc := u.proc
	u.cs, u.proc = nil, nil
	u.mu.Unlock()
	_ = cs.Close() // closes the command's stdin and stdout
	if proc != nil {
		endProcess(proc)
	}
}

// close ends the connection for good.
func (u *upstream) close() {
	u.mu.Lock()
	u.closed = true
	cs := u.cs
	u.mu.Unlock()
	if cs != nil {
		u.drop(cs)
	}
}

// endProcess ends a server command whose stdin is closed, as MCP's stdio
// transport says: it may exit on its own, then it gets SIGTERM, then
// SIGKILL; and whatever is left of its process group is killed while the
// command, not yet reaped, still holds the group's number (so that it
// cannot be another's).
func endProcess(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var si unix.Siginfo
		for {
			// WNOWAIT: seen to exit, not reaped.
			if err := unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
				return
			}
		}
	}()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-exited:
		case <-time.After(terminateAfter):
			_ = syscall.Kill(-pid, sig)
			continue
		}
		break
	}
	<-exited
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// spawnThread is one OS thread that starts every server command and lives
// as long as the daemon: Pdeathsig is the death of the thread that forked,
// and Go ends a thread whose goroutine locked it and left (as the
// daemon's network namespace code does), which would kill a server
// mid-call.
var (
	spawnOnce sync.Once
	spawns    = make(chan func())
)

func onSpawnThread(f func()) {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked
			for f := range spawns {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawns <- func() { f(); close(done) }
	<-done
}

// broken reports whether err means the connection is of no more use: not
// an error the server answered with.
func broken(err error) bool {
	var werr *jsonrpc.Error
	return !errors.As(err, &werr)
}

// stderrLog logs what a server command writes on stderr, a line at a time
// (a line cut at maxStderrLine), at debug level.
type stderrLog struct {
	log *slog.Logger
	buf []byte
}

const maxStderrLine = 4096

func (w *stderrLog) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) < maxStderrLine {
			return len(p), nil
		}
		if i < 0 || i > maxStderrLine {
			i = min(len(w.buf), maxStderrLine)
			w.log.Debug("MCP server stderr", "line", string(w.buf[:i]))
			w.buf = w.buf[i:]
			continue
		}
		w.log.Debug("MCP server stderr", "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runningAgent is an agent run by python3 directly, without a sandbox or
// the daemon: its modules in a scratch folder that plays Dir, its
// listener on ListenFD as in a sandbox, and today's Conn to it.
type runningAgent struct {
	conn *Conn
	pong *Message
	sock string
	// ws is a scratch folder for the agent's executions (there may be no
	// /workspace).
	ws string
	// log is the file with what the agent wrote on fd 1 and 2.
	log string
	// sibling, for an agent in a pid namespace, is the file with the
	// namespace's pid of a process started beside the agent.
	sibling string
	// spawnSock is the agent's listener for processes (SpawnFD).
	spawnSock string
}

// startAgent installs files (an agent as the runtime installs it in Dir)
// and runs it. Outside a pid namespace of its own a bug in the agent
// could kill(-1) every process the tests may signal, so:
//   - with pidns false, the bootstrap refuses kill(-1) (an older agent
//     would not refuse it itself);
//   - with pidns true, the agent runs unguarded in a new pid namespace
//     whose PID 1 is a shell, beside a sibling process (see sibling): it
//     is not PID 1 there, and a kill(-1) it made would not leave the
//     namespace. The test is skipped where no pid namespace can be made
//     (not root, and no unprivileged user namespaces).
func startAgent(t testing.TB, files []File, pidns bool) *runningAgent {
	t.Helper()
	return startAgentOn(t, files, pidns, "")
}

// startAgentOn is startAgent with the supervisor a native one (the
// sandboxd-supervisor binary at native: see buildSupervisor), or with ""
// the Python one.
func startAgentOn(t testing.TB, files []File, pidns bool, native string) *runningAgent {
	t.Helper()
	py := python3(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "sandboxd")
	ra := &runningAgent{sock: filepath.Join(tmp, "agent.sock"), ws: filepath.Join(tmp, "ws"),
		log: filepath.Join(tmp, "agent.log"), sibling: filepath.Join(tmp, "sibling.pid"), spawnSock: filepath.Join(tmp, "spawn.sock")}
	for _, d := range []string{dir, ra.ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := listenUnix(ra.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // the agent has its copy
	sln, err := listenUnix(ra.spawnSock)
	if err != nil {
		t.Fatal(err)
	}
	defer sln.Close()
	logf, err := os.Create(ra.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()

	boot := fmt.Sprintf("import sys; sys.path[0] = %s; import %s; %s.main()\n", strconv.Quote(dir), Module, Module)
	argv := []string{py, "-S", "-c", boot}
	if native != "" {
		argv = []string{native, py, dir}
	}
	var cmd *exec.Cmd
	if pidns {
		// The shell stays PID 1 ("$@" is not its last command, so it forks).
		cmd = exec.Command("/bin/sh", append([]string{"-c", `sleep 600 & echo $! >"$0"; "$@"; exit 0`, ra.sibling}, argv...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		if os.Geteuid() != 0 {
			cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
			cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
			cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		}
	} else if native != "" {
		// The native supervisor refuses kill(-1) itself unless it is
		// PID 1, and is its children's subreaper where it is not.
		cmd = exec.Command(argv[0], argv[1:]...)
	} else {
		// In a sandbox the agent is PID 1, so the orphans of a command
		// it kills (a shell's children) are its to reap. Here it is made
		// their subreaper for the same reason: else they wait for the
		// host's init, which may reap late (this host's: the agent's wait
		// for a killed group to be gone then took its full 2 s).
		subreaper := "import ctypes\nctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
		guard := subreaper + "import os\n_kill = os.kill\n" +
			"def _refuse_kill_all(pid, sig):\n" +
			"    if pid == -1:\n" +
			"        raise PermissionError('the test refuses kill(-1)')\n" +
			"    _kill(pid, sig)\n" +
			"os.kill = _refuse_kill_all\n"
		cmd = exec.Command(py, "-S", "-c", guard+boot)
	}
	cmd.Dir = ra.ws
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ra.ws, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	cmd.ExtraFiles = []*os.File{ln, sln} // fds 3 and 4: ListenFD, SpawnFD
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		if pidns {
			t.Skipf("no pid namespace to contain the agent in (needs root or unprivileged user namespaces): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ra.conn != nil {
			ra.conn.Close()
		}
		// Killing the supervisor (or the namespace's PID 1, which takes the
		// namespace along) ends the worker too: its request pipe closes.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(ra.log)
			t.Logf("agent log:\n%s", b)
		}
	})
	ra.connect(t)
	return ra
}

// connect dials the agent and pings it, as the daemon does.
func (ra *runningAgent) connect(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, ra.sock)
	if err != nil {
		t.Fatal(err)
	}
	if ra.pong, err = c.Ping(ctx, false); err != nil {
		c.Close()
		t.Fatal(err)
	}
	ra.conn = c
}

// listenUnix makes a listening Unix socket for a child's fd 3, outside Go's
// poller: the agent expects a blocking listener.
func listenUnix(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Listen(fd, 16); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// exec runs req and returns the done message and what came on stdout and
// stderr.
func (ra *runningAgent) exec(t testing.TB, req Request) (m *Message, stdout, stderr string) {
	t.Helper()
	m, stdout, stderr, err := ra.tryExec(req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Code, err)
	}
	return m, stdout, stderr
}

// tryExec is exec, with the error returned.
func (ra *runningAgent) tryExec(req Request) (m *Message, stdout, stderr string, err error) {
	if req.Timeout == 0 {
		req.Timeout = 30
	}
	if req.Cwd == "" && req.Language == LanguageShell {
		req.Cwd = ra.ws
	}
	var out, errOut strings.Builder
	m, err = ra.conn.Exec(req, time.Duration(req.Timeout*float64(time.Second))+30*time.Second, func(kind, data string) {
		if kind == TypeStdout {
			out.WriteString(data)
		} else {
			errOut.WriteString(data)
		}
	}, nil)
	return m, out.String(), errOut.String(), err
}

// result is an execution's result, "<nil>" for none.
func result(m *Message) string {
	if m.Result == nil {
		return "<nil>"
	}
	return *m.Result
}

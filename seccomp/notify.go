package seccomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Violation is one system call a sandbox was refused.
type Violation struct {
	// Sandbox is the id the sandbox was started with (its listener metadata).
	Sandbox string
	Pid     int
	// Comm is the process's command name, as far as it could be read.
	Comm    string
	Syscall string
}

// Monitor receives the seccomp user-notification fd of every sandbox,
// which libcontainer sends to a Unix socket (the profile's listenerPath), and
// answers each refused system call with EPERM after reporting it. So the
// daemon sees, with the session's id, what code tried to do, which a plain
// SCMP_ACT_ERRNO filter would hide.
//
// If the daemon is gone the kernel answers those calls ENOSYS by itself:
// nothing waits on a dead monitor.
type Monitor struct {
	path   string
	l      *net.UnixListener
	report func(Violation)

	wg     sync.WaitGroup
	mu     sync.Mutex
	files  map[*os.File]struct{}
	closed bool
}

// NotifySupported says whether this kernel and libseccomp can hand refused
// calls to the daemon: libseccomp-golang's notify calls want API level 6
// (Linux 5.7+, libseccomp 2.5+).
func NotifySupported() bool {
	api, err := libseccomp.GetAPI()
	return err == nil && api >= 6
}

// Listen starts a monitor on a Unix socket at path; report is called for
// each refused call, from the monitor's goroutines.
func Listen(path string, report func(Violation)) (*Monitor, error) {
	_ = os.Remove(path) // a stale socket of an earlier daemon
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("seccomp monitor: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	m := &Monitor{path: path, l: l, report: report, files: map[*os.File]struct{}{}}
	m.wg.Add(1)
	go m.accept()
	return m, nil
}

// Profile returns p made to send the calls named in watched to this
// monitor, for sandbox id. (Not every refused call: libcontainer's init runs
// under the filter before the monitor has its fd, so a notifying default
// action is not allowed; the rest stay refused quietly by the kernel.)
func (m *Monitor) Profile(p *specs.LinuxSeccomp, watched []string, id string) *specs.LinuxSeccomp {
	if len(watched) == 0 {
		return p
	}
	c := *p
	c.Syscalls = append(slices.Clip(c.Syscalls), specs.LinuxSyscall{Names: watched, Action: specs.ActNotify})
	c.ListenerPath = m.path
	c.ListenerMetadata = id
	return &c
}

// Close stops accepting and stops watching every sandbox. Calls blocked on
// the monitor then fail with ENOSYS.
func (m *Monitor) Close() error {
	m.mu.Lock()
	m.closed = true
	for f := range m.files {
		// Closing wakes the poller waiting on f.
		f.Close()
	}
	m.mu.Unlock()
	err := m.l.Close()
	m.wg.Wait()
	_ = os.Remove(m.path)
	return err
}

func (m *Monitor) accept() {
	defer m.wg.Done()
	for {
		c, err := m.l.AcceptUnix()
		if err != nil {
			return
		}
		f, id, err := receive(c)
		c.Close()
		if err != nil {
			continue
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			f.Close()
			return
		}
		m.files[f] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.watch(f, id)
	}
}

// receive reads libcontainer's message: the container process state as
// JSON, with the notification fd attached.
func receive(c *net.UnixConn) (*os.File, string, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, "", err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, "", errors.New("seccomp monitor: no fd in message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, "", errors.New("seccomp monitor: want one fd")
	}
	var st specs.ContainerProcessState
	if err := json.Unmarshal(buf[:n], &st); err != nil {
		unix.Close(fds[0])
		return nil, "", fmt.Errorf("seccomp monitor: %w", err)
	}
	// Non-blocking, so that the fd joins Go's poller and a quiet sandbox
	// costs no thread.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, "", err
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-notify-"+st.Metadata), st.Metadata, nil
}

// watch answers the notifications of one sandbox until all its processes
// are gone (the fd hangs up) or the monitor closes.
func (m *Monitor) watch(f *os.File, id string) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		delete(m.files, f)
		m.mu.Unlock()
		f.Close()
	}()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var req *libseccomp.ScmpNotifReq
		var rerr error
		hup := false
		err := rc.Read(func(fd uintptr) bool {
			var pfd = []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(pfd, 0); n == 0 {
				return false // nothing yet: wait for the poller
			}
			if pfd[0].Revents&unix.POLLIN == 0 {
				hup = pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
				return hup
			}
			req, rerr = libseccomp.NotifReceive(libseccomp.ScmpFd(fd))
			return true
		})
		if err != nil || hup {
			return
		}
		if rerr != nil || req == nil {
			// The caller died between poll and receive: nothing to answer.
			continue
		}
		m.report(violation(id, req))
		_ = rc.Control(func(fd uintptr) {
			_ = libseccomp.NotifRespond(libseccomp.ScmpFd(fd), &libseccomp.ScmpNotifResp{ID: req.ID, Error: int32(unix.EPERM)})
		})
	}
}

func violation(id string, req *libseccomp.ScmpNotifReq) Violation {
	name, err := req.Data.Syscall.GetNameByArch(req.Data.Arch)
	if err != nil {
		name = "syscall " + strconv.Itoa(int(req.Data.Syscall))
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", req.Pid))
	return Violation{Sandbox: id, Pid: int(req.Pid), Comm: strings.TrimSpace(string(comm)), Syscall: name}
}

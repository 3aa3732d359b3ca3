package lxcfs

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A host where lxcfs is installed but nothing serves it (no systemd, or
// its service not started) would show sandboxes the host's /proc/meminfo.
// There the daemon runs an lxcfs of its own, mounted in a folder of its
// own state dir (each daemon of a host has its own, and never touches
// another's), and supervises it.
//
// That lxcfs outlives the daemon's process while sessions run on: their
// sandboxes bind files of its mount, and a FUSE mount whose process dies
// fails every read (ENOTCONN) in each sandbox that bound it, for as long
// as the sandbox runs. So it runs in a session of its own and is no child
// of the daemon (no signal for the daemon reaches it, and the daemon's
// end does not take it), a daemon that leaves sessions running leaves it
// running too, and the next daemon adopts it by its mount and pid file.
// Whether started or adopted, it is watched through /proc.
// A daemon that leaves no session stops it and unmounts it.

// Own is the daemon's own lxcfs.
type Own struct {
	dir, mnt, pidFile, logFile string
	bin                        string
	log                        *slog.Logger
	// adopted says it was serving already when the daemon started: a
	// previous daemon's, kept for the sessions it left running.
	adopted bool

	mu  sync.Mutex
	pid int // 0 while none runs

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Binary is the lxcfs program of the host ("" when it is not installed).
func Binary() string {
	if p, err := exec.LookPath("lxcfs"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/lxcfs", "/usr/local/bin/lxcfs"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// StartOwn serves lxcfs at dir/mnt with the program bin: it adopts the
// lxcfs already serving there (a previous daemon's) or starts one, and
// restarts it whenever it dies, with back-off. Close stops it.
func StartOwn(dir, bin string, log *slog.Logger) (*Own, error) {
	o := &Own{
		dir: dir, mnt: filepath.Join(dir, "mnt"), pidFile: filepath.Join(dir, "lxcfs.pid"), logFile: filepath.Join(dir, "lxcfs.log"),
		bin: bin, log: log, stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := os.MkdirAll(o.mnt, 0o755); err != nil {
		return nil, err
	}
	if pid := o.recordedPID(); pid > 0 && isLXCFS(pid, o.mnt) {
		if _, err := Serving(o.mnt); err == nil {
			o.adopted = true
			o.pid = pid
			log.Info("lxcfs: serving sandboxes with the daemon's own, left running by the previous daemon", "pid", pid)
			go o.supervise()
			return o, nil
		}
	}
	// Whatever a previous daemon left that does not serve goes: a process
	// that hangs, a mount whose process died.
	o.end(o.recordedPID())
	o.unmount()
	pid, err := o.spawn()
	if err != nil {
		o.unmount()
		return nil, err
	}
	o.pid = pid
	log.Info("lxcfs: nothing serves lxcfs_dir: the daemon started its own", "pid", pid)
	go o.supervise()
	return o, nil
}

// Dir is the lxcfs mount sandboxes bind files of.
func (o *Own) Dir() string { return o.mnt }

// Adopted says the lxcfs was serving when the daemon started.
func (o *Own) Adopted() bool { return o.adopted }

// Close stops supervising; unless keep (sandboxes left running bind its
// files), it stops the lxcfs and unmounts it.
func (o *Own) Close(keep bool) error {
	o.once.Do(func() { close(o.stop) })
	<-o.done
	o.mu.Lock()
	pid := o.pid
	o.mu.Unlock()
	if keep {
		if pid != 0 {
			o.log.Info("lxcfs: the daemon's own runs on for the sessions left running", "pid", pid)
		}
		return nil
	}
	o.end(pid)
	err := o.unmount()
	_ = os.Remove(o.pidFile)
	return err
}

// spawnWait is how long a starting lxcfs has to serve.
const spawnWait = 10 * time.Second

// spawn starts lxcfs in the foreground (its log in logFile) of a session
// of its own, through a shell that exits at once: lxcfs is no child of the
// daemon (init, or the nearest subreaper, reaps it), so it can outlive
// the daemon's process. It waits until the mount serves.
func (o *Own) spawn() (int, error) {
	_ = os.Remove(o.pidFile)
	// A log that grew large starts afresh.
	if st, err := os.Stat(o.logFile); err == nil && st.Size() > 1<<20 {
		_ = os.Remove(o.logFile)
	}
	logf, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	// --enable-cfs: cpuinfo, stat and cpu/online follow the CPU quota as
	// well as the cpuset. The shell prints lxcfs's pid on its stdout.
	cmd := exec.Command("/bin/sh", "-c", `"$0" "$@" </dev/null >&3 2>&3 3>&- & echo $!`, o.bin, "-f", "--enable-cfs", "-p", o.pidFile, o.mnt)
	cmd.ExtraFiles = []*os.File{logf}
	cmd.Stderr = logf
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("start lxcfs: %w", err)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(out)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("start lxcfs: no pid (%q)", out)
	}
	for deadline := time.Now().Add(spawnWait); ; time.Sleep(20 * time.Millisecond) {
		if _, err := Serving(o.mnt); err == nil {
			return pid, nil
		}
		// Alive, not yet lxcfs: the shell's child between fork and exec.
		if !alive(pid) {
			return 0, fmt.Errorf("lxcfs exited at start: %s", o.logTail())
		}
		if time.Now().After(deadline) {
			o.end(pid)
			return 0, fmt.Errorf("lxcfs did not serve within %v: %s", spawnWait, o.logTail())
		}
	}
}

// Back-off of restarts: doubled after each restart that does not last,
// from restartMin to restartMax.
const (
	restartMin  = time.Second
	restartMax  = time.Minute
	lxcfsPoll   = time.Second
	stableAfter = time.Minute
)

// supervise restarts the lxcfs whenever it dies, until Close.
func (o *Own) supervise() {
	defer close(o.done)
	backoff := restartMin
	started := time.Now()
	for {
		o.mu.Lock()
		pid := o.pid
		o.mu.Unlock()
		if pid != 0 {
			if !o.waitExit(pid) {
				return
			}
			o.log.Warn("lxcfs: the daemon's own exited: sandboxes started from now on show the host's /proc/meminfo until it serves again; sandboxes running now fail to read those files until they restart", "pid", pid, "log", o.logTail())
			o.mu.Lock()
			o.pid = 0
			o.mu.Unlock()
			o.unmount()
			if time.Since(started) > stableAfter {
				backoff = restartMin
			}
		}
		select {
		case <-o.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, restartMax)
		np, err := o.spawn()
		if err != nil {
			o.log.Warn("lxcfs: cannot restart the daemon's own", "err", err, "retry_in", backoff)
			o.unmount()
			continue
		}
		started = time.Now()
		o.mu.Lock()
		o.pid = np
		o.mu.Unlock()
		o.log.Info("lxcfs: the daemon's own serves again", "pid", np)
	}
}

// waitExit waits until the lxcfs of pid ends (true) or Close (false).
func (o *Own) waitExit(pid int) bool {
	t := time.NewTicker(lxcfsPoll)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return false
		case <-t.C:
			if !isLXCFS(pid, o.mnt) {
				return true
			}
		}
	}
}

// end stops the lxcfs of pid: SIGTERM (lxcfs unmounts itself), SIGKILL
// after 5 s.
func (o *Own) end(pid int) {
	if pid <= 0 || !isLXCFS(pid, o.mnt) {
		return
	}
	_ = unix.Kill(pid, unix.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); isLXCFS(pid, o.mnt); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = unix.Kill(pid, unix.SIGKILL)
			deadline = time.Now().Add(time.Hour)
		}
	}
}

// unmount lazily unmounts the mount, if any: a dead lxcfs's, or one its
// process left.
func (o *Own) unmount() error {
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(o.mnt, &st); err == nil && st.Type != unix.FUSE_SUPER_MAGIC {
			return nil
		}
		// EINVAL: nothing mounted there; ENOENT: no folder.
		if err := unix.Unmount(o.mnt, unix.MNT_DETACH); err != nil {
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("unmount the daemon's lxcfs: %w", err)
		}
	}
}

// recordedPID is the pid lxcfs wrote in its pid file (0: none).
func (o *Own) recordedPID() int {
	b, err := os.ReadFile(o.pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	return pid
}

// logTail is the last lines of the lxcfs log, for messages.
func (o *Own) logTail() string {
	b, _ := os.ReadFile(o.logFile)
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return string(bytes.Join(lines, []byte("; ")))
}

// procStat is the name and state of the process pid ("" when there is
// none).
func procStat(pid int) (comm string, state byte) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	// pid (comm) state ...
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || len(b) < end+3 {
		return "", 0
	}
	return string(b[open+1 : end]), b[end+2]
}

// alive says pid is a process that has not ended (nor is a zombie).
func alive(pid int) bool {
	comm, state := procStat(pid)
	return comm != "" && state != 'Z' && state != 'X'
}

// isLXCFS says pid is a live lxcfs serving at mnt: not a zombie, nor
// another program, nor another lxcfs (the system's, another daemon's)
// that took its pid.
func isLXCFS(pid int, mnt string) bool {
	if comm, _ := procStat(pid); comm != "lxcfs" || !alive(pid) {
		return false
	}
	// Its last argument is its mount point.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	return string(args[len(args)-1]) == mnt
}

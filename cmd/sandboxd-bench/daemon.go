package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/client"
)

// daemon is a sandboxd the bench started on folders of its own.
type daemon struct {
	dir string
	cmd *exec.Cmd
	c   *client.Client
}

// startDaemon starts bin with the given config lines and waits until it
// answers and its warm pools are full.
func startDaemon(ctx context.Context, bin, config string) (_ *daemon, retErr error) {
	dir, err := os.MkdirTemp("/tmp", "sbd-bench-")
	if err != nil {
		return nil, err
	}
	// Sandboxes' own root (a nobody on the host, in a user namespace)
	// must reach their folders under this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	// The run dir on a tmpfs, as /run is on a production host: on the
	// host's disk, every durable write the daemon makes (a pooled
	// claim's record) also flushed what the pool's refills had just
	// written there (runc's state, the sandbox's folders), and the bench
	// measured this disk's write-back, not the daemon.
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		return nil, err
	}
	if err := unix.Mount("tmpfs", run, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return nil, fmt.Errorf("a tmpfs for the run dir: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = unix.Unmount(run, unix.MNT_DETACH) // stop has run, or no daemon did
		}
	}()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "s.sock")
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	d := &daemon{dir: dir, c: client.New(sock)}
	d.cmd = exec.Command(bin, "--config", cfg, "--socket", sock,
		"--data-dir", filepath.Join(dir, "data"), "--run-dir", run, "--log-level", "warn")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for h, _ := d.c.HealthStatus(ctx); h == nil; h, _ = d.c.HealthStatus(ctx) {
		if time.Now().After(deadline) {
			err := fmt.Errorf("sandboxd did not answer within 30s: %s", d.lastLog())
			d.stop()
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.waitPool(ctx); err != nil {
		d.stop()
		return nil, fmt.Errorf("%w: %s", err, d.lastLog())
	}
	return d, nil
}

// lastLog is the end of the daemon's log, for an error message.
func (d *daemon) lastLog() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "daemon.log"))
	if len(b) > 1000 {
		b = b[len(b)-1000:]
	}
	return string(b)
}

// waitPool waits until every warm pool is full.
func (d *daemon) waitPool(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := d.c.Info(ctx)
		if err == nil && info.Pool.Idle >= max(info.Pool.Size, info.Pool.Target) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the warm pool did not fill within 60s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stop deletes every session, stops the daemon and removes its folders.
func (d *daemon) stop() {
	ctx := context.Background()
	if list, err := d.c.ListSessions(ctx, nil); err == nil {
		for _, s := range list {
			_ = d.c.DeleteSession(ctx, s.ID)
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
	d.c.Close()
	_ = unix.Unmount(filepath.Join(d.dir, "run"), unix.MNT_DETACH)
	_ = os.RemoveAll(d.dir)
}

// rssBytes is the daemon's resident memory.
func (d *daemon) rssBytes() int64 {
	return statusKB(d.cmd.Process.Pid, "VmRSS") << 10
}

// statusKB reads one kB field of /proc/PID/status.
func statusKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// pssBytes is the proportional set size of every process whose cgroup
// names the session: what the session's processes cost the host in
// memory, shared pages split between their users.
func pssBytes(id string) int64 {
	ents, _ := os.ReadDir("/proc")
	var total int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cg, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil || !strings.Contains(string(cg), id) {
			continue
		}
		total += pssOf(e.Name())
	}
	return total
}

// pssOf is the PSS of process pid, 0 if it is gone.
func pssOf(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

// usable says the daemon can run sessions on runtime name.
func (d *daemon) usable(ctx context.Context, name string) bool {
	info, err := d.c.Info(ctx)
	if err != nil {
		return false
	}
	for _, rt := range info.Runtimes {
		if rt.Name == name {
			return rt.Usable
		}
	}
	return false
}

package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// procStat is what the leak and load tests watch of the daemon process.
type procStat struct {
	fds, threads, children int
	rssKB                  int64
}

func (p procStat) String() string {
	return fmt.Sprintf("fds %d, threads %d, children %d, RSS %.1f MiB", p.fds, p.threads, p.children, float64(p.rssKB)/1024)
}

func statOf(t testing.TB, pid int) procStat {
	t.Helper()
	var p procStat
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	p.fds = len(fds)
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		switch k {
		case "VmRSS":
			p.rssKB, _ = strconv.ParseInt(fields[0], 10, 64)
		case "Threads":
			p.threads, _ = strconv.Atoi(fields[0])
		}
	}
	// Children: every process whose parent is the daemon.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		// The fields after the command's closing parenthesis: state, ppid.
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				p.children++
			}
		}
	}
	return p
}

// mounts counts the mounts of the daemon's own: those whose mount point
// is in its base or state dir. Other tests and daemons mount and unmount
// on this host at the same time, so a count of every mount would not do.
func (d *daemon) mounts(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && d.owns(f[4]) {
			n++
		}
	}
	return n
}

// loopDevices counts the loop devices attached to a file of the daemon's.
func (d *daemon) loopDevices() int {
	m, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	n := 0
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil && d.owns(strings.TrimSpace(string(b))) {
			n++
		}
	}
	return n
}

// owns tells whether path is in the daemon's base or state dir.
func (d *daemon) owns(path string) bool {
	for _, dir := range []string{d.base, d.stateDir()} {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// loopHolders says, for each loop device attached to a file of the
// daemon's, its backing file and every process whose mount namespace
// still has it mounted (pid, command, mount namespace, mount point): what
// keeps a device that should have gone.
func (d *daemon) loopHolders() string {
	m, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out strings.Builder
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil || !d.owns(strings.TrimSpace(string(b))) {
			continue
		}
		dir := filepath.Dir(filepath.Dir(p))
		dev, _ := os.ReadFile(filepath.Join(dir, "dev"))
		majMin := strings.TrimSpace(string(dev))
		fmt.Fprintf(&out, "%s (%s) backs %s; mounted by:", filepath.Base(dir), majMin, strings.TrimSpace(string(b)))
		seen := map[string]bool{}
		procs, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
		for _, mi := range procs {
			pdir := filepath.Dir(mi)
			ns, _ := os.Readlink(filepath.Join(pdir, "ns", "mnt"))
			info, err := os.ReadFile(mi)
			if err != nil || seen[ns] {
				continue
			}
			for _, line := range strings.Split(string(info), "\n") {
				if f := strings.Fields(line); len(f) > 4 && f[2] == majMin {
					comm, _ := os.ReadFile(filepath.Join(pdir, "comm"))
					cmd, _ := os.ReadFile(filepath.Join(pdir, "cmdline"))
					cg, _ := os.ReadFile(filepath.Join(pdir, "cgroup"))
					st, _ := os.ReadFile(filepath.Join(pdir, "status"))
					var keep []string
					for _, l := range strings.Split(string(st), "\n") {
						if k, _, _ := strings.Cut(l, ":"); k == "State" || k == "PPid" || k == "NSpid" || k == "Uid" {
							keep = append(keep, strings.Join(strings.Fields(l), " "))
						}
					}
					fmt.Fprintf(&out, " pid %s (%s %q) %s at %s [%s; cgroup %s];", filepath.Base(pdir), strings.TrimSpace(string(comm)),
						strings.ReplaceAll(string(cmd), "\x00", " "), ns, f[4], strings.Join(keep, ", "), strings.TrimSpace(string(cg)))
					seen[ns] = true
					break
				}
			}
		}
		out.WriteString("\n")
	}
	return out.String()
}

// checkMountNS fails the test if the daemon's main thread left the host's
// mount namespace: a sandbox's namespace held there keeps its mounts
// (disk and loop device) alive for the daemon's whole life (see
// isolation's init).
func (d *daemon) checkMountNS(t testing.TB) {
	t.Helper()
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", d.cmd.Process.Pid)); err != nil || got != own {
		t.Errorf("the daemon's main thread is in mount namespace %s (%v), not the host's %s", got, err, own)
	}
}

package hostcheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// fakeProc makes a /proc with the given files.
func fakeProc(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content+"\n"), 0o644)
	}
	return dir
}

func TestProcChecks(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		check func(Host) Result
		want  Status
		text  string
	}{
		{"seccomp present", map[string]string{"sys/kernel/seccomp/actions_avail": "kill_process kill_thread trap errno user_notif trace log allow"}, Host.Seccomp, OK, "errno"},
		{"seccomp missing", nil, Host.Seccomp, Fail, "CONFIG_SECCOMP_FILTER"},
		{"seccomp without errno", map[string]string{"sys/kernel/seccomp/actions_avail": "kill allow"}, Host.Seccomp, Fail, "errno"},
		{"userns off", map[string]string{"sys/user/max_user_namespaces": "0"}, Host.UserNamespaces, Warn, "disabled"},
		{"ubuntu apparmor", map[string]string{"sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, Host.UserNamespaces, Info, "AppArmor"},
		{"debian clone off", map[string]string{"sys/kernel/unprivileged_userns_clone": "0"}, Host.UserNamespaces, Info, "unprivileged_userns_clone"},
		{"userns fine", map[string]string{"sys/user/max_user_namespaces": "1000"}, Host.UserNamespaces, OK, ""},
		{"kernel", map[string]string{"sys/kernel/osrelease": "6.1.0-test"}, Host.Kernel, OK, "6.1.0-test"},
	}
	for _, c := range cases {
		h := Host{Proc: fakeProc(t, c.files)}
		r := c.check(h)
		if r.Status != c.want || !strings.Contains(r.Detail, c.text) {
			t.Errorf("%s: %+v, want %s with %q", c.name, r, c.want, c.text)
		}
	}
}

func TestRunscHugePages(t *testing.T) {
	for _, c := range []struct {
		shmem, defrag string
		want          Status
		text          string
	}{
		{"always within_size advise [never] deny force", "always defer defer+madvise [madvise] never", Info, `off (shmem_enabled "never"`},
		{"always within_size [advise] never deny force", "always defer defer+madvise [madvise] never", Info, "off"},
		{"always within_size [advise] never deny force", "always [defer] defer+madvise madvise never", OK, "on"},
		{"always [within_size] advise never deny force", "always defer defer+madvise [madvise] never", OK, "on"},
		{"[force]", "[madvise]", OK, "on"},
		{"always within_size advise never", "[madvise]", Info, "no setting selected"},
	} {
		sys := fakeProc(t, map[string]string{
			"kernel/mm/transparent_hugepage/shmem_enabled": c.shmem,
			"kernel/mm/transparent_hugepage/defrag":        c.defrag,
		})
		if r := (Host{Sys: sys}).RunscHugePages(); r.Status != c.want || !strings.Contains(r.Detail, c.text) {
			t.Errorf("%q %q: %+v, want %s with %q", c.shmem, c.defrag, r, c.want, c.text)
		}
	}
	if r := (Host{Sys: t.TempDir()}).RunscHugePages(); r.Status != Info || !strings.Contains(r.Detail, "cannot read") {
		t.Errorf("no such files: %+v", r)
	}
}

func TestFileChecks(t *testing.T) {
	h := Host{Python: "/nonexistent/python3", Socket: filepath.Join(t.TempDir(), "none.sock"), DataDir: "/nonexistent/data"}
	if r := h.PythonTemplate(); r.Status != Fail || !strings.Contains(r.Detail, "install the python3 package") {
		t.Errorf("python: %+v", r)
	}
	if r := h.SocketAccess(); r.Status != Fail || !strings.Contains(r.Detail, "is sandboxd running") {
		t.Errorf("socket: %+v", r)
	}
	if r := h.Disk(); r.Status == Fail && !strings.Contains(r.Detail, "free") {
		t.Errorf("disk of a missing folder looks at its parent: %+v", r)
	}
	if r := (Host{Cgroup: t.TempDir()}).Cgroups(); r.Status != Fail {
		t.Errorf("a plain folder is no cgroup hierarchy: %+v", r)
	}
	if r := Default("", "/", "/run", "", Probes{}).Cgroups(); r.Status == Fail {
		t.Errorf("this host's cgroups: %+v", r)
	}
	if r := (Host{Dev: t.TempDir()}).DiskQuota(); r.Status != Warn || !strings.Contains(r.Detail, "disk_quota") {
		t.Errorf("no loop devices: %+v", r)
	}
	// As isolation/volume finds it: an ordinary user's PATH has no sbin.
	mkfs := func() (string, error) {
		for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return exec.LookPath("mkfs.ext4")
	}
	if r := Default("", "/", "/run", "", Probes{Mkfs: mkfs}).DiskQuota(); r.Status != OK {
		t.Errorf("this host has loop devices and mkfs.ext4: %+v", r)
	}
	if r := (Host{Dev: "/dev", Probes: Probes{Mkfs: func() (string, error) { return "", exec.ErrNotFound }}}).DiskQuota(); r.Status != Warn || !strings.Contains(r.Detail, "e2fsprogs") {
		t.Errorf("no mkfs.ext4: %+v", r)
	}
	notServing := Probes{LXCFS: func(string) (bool, error) { return false, errors.New("not a FUSE mount") }}
	if r := (Host{LXCFS: t.TempDir(), Probes: notServing}).LXCFSServes(); r.Status != Warn || !strings.Contains(r.Detail, "install lxcfs") {
		t.Errorf("a plain folder is no lxcfs: %+v", r)
	}
	stalled := Probes{LXCFS: func(string) (bool, error) { return true, errors.New("lxcfs is mounted but does not answer") }}
	if r := (Host{LXCFS: t.TempDir(), Probes: stalled}).LXCFSServes(); r.Status != Warn || !strings.Contains(r.Detail, "restart lxcfs") {
		t.Errorf("a stalled lxcfs: %+v", r)
	}
	if r := (Host{}).LXCFSServes(); r.Status != Info {
		t.Errorf("lxcfs_dir off: %+v", r)
	}
	// Installed but not serving: the daemon runs its own.
	if r := (Host{LXCFS: t.TempDir(), LXCFSBinary: "/usr/bin/lxcfs", Probes: notServing}).LXCFSServes(); r.Status != Info || !strings.Contains(r.Detail, "the daemon runs its own") {
		t.Errorf("lxcfs installed, not serving: %+v", r)
	}
	for _, c := range []struct {
		pv   api.ProcViewInfo
		want Status
	}{
		{api.ProcViewInfo{ServedBy: api.ProcViewSystem}, OK},
		{api.ProcViewInfo{ServedBy: api.ProcViewDaemon}, OK},
		{api.ProcViewInfo{ServedBy: api.ProcViewNone, Problem: "lxcfs is not installed"}, Warn},
	} {
		if r := DaemonProcView(c.pv); r.Status != c.want {
			t.Errorf("DaemonProcView(%+v) = %+v, want %s", c.pv, r, c.want)
		}
	}
	if !Failed([]Result{{Status: OK}, {Status: Fail}}) || Failed([]Result{{Status: Warn}}) {
		t.Error("Failed")
	}
}

// TestDataDirFloor: doctor's line from the daemon's health.
func TestDataDirFloor(t *testing.T) {
	if r := DataDirFloor(80, 1024, false); r.Status != Fail || !strings.Contains(r.Detail, "80 MiB free, floor 1024 MiB") {
		t.Fatalf("below the floor: %+v", r)
	}
	if r := DataDirFloor(4096, 1024, true); r.Status != OK {
		t.Fatalf("above the floor: %+v", r)
	}
}

func TestDaemonRuntimes(t *testing.T) {
	runc := api.RuntimeInfo{Name: "runc", Usable: true, Networks: true}
	runsc := api.RuntimeInfo{Name: "runsc", Usable: true, Platform: "ptrace"}
	broken := api.RuntimeInfo{Name: "runsc", Problem: "runsc is not installed"}
	cases := []struct {
		name string
		info api.Info
		want Status
		text string
	}{
		{"both usable", api.Info{Runtime: "runc", Runtimes: []api.RuntimeInfo{runc, runsc}}, OK, `runc (default); runsc: network "none" only`},
		{"other one unusable", api.Info{Runtime: "runc", Runtimes: []api.RuntimeInfo{runc, broken}}, Warn, "runsc: not usable: runsc is not installed"},
		{"default unusable", api.Info{Runtime: "runsc", Runtimes: []api.RuntimeInfo{runc, broken}}, Fail, "runsc (default): not usable"},
		{"an older daemon", api.Info{}, Info, "does not list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := DaemonRuntimes(&c.info)
			if r.Status != c.want || !strings.Contains(r.Detail, c.text) {
				t.Errorf("got %s %q, want %s with %q", r.Status, r.Detail, c.want, c.text)
			}
		})
	}
}

func TestRunscNotInstalled(t *testing.T) {
	r := Host{RunscPath: filepath.Join(t.TempDir(), "runsc")}.Runsc()
	if r.Status != Info || !strings.Contains(r.Detail, "not installed") {
		t.Errorf("got %s %q", r.Status, r.Detail)
	}
}

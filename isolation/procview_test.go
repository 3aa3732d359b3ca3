package isolation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/isolation/lxcfs"
)

func TestProcViewMounts(t *testing.T) {
	ms := procViewMounts("/var/lib/lxcfs", []string{"proc/meminfo", "sys/devices/system/cpu/online"})
	if len(ms) != 2 {
		t.Fatalf("got %d mounts, want 2", len(ms))
	}
	m := ms[0]
	if m.Destination != "/proc/meminfo" || m.Source != "/var/lib/lxcfs/proc/meminfo" || m.Type != "bind" {
		t.Fatalf("got %+v", m)
	}
	if !strings.Contains(strings.Join(m.Options, ","), "ro") {
		t.Fatalf("not read-only: %v", m.Options)
	}
	if ms[1].Destination != "/sys/devices/system/cpu/online" {
		t.Fatalf("got %+v", ms[1])
	}
	if procViewMounts("/x", nil) != nil {
		t.Fatal("no files, yet mounts")
	}
}

// TestProcViewFilesRuncAllows keeps lxcfs.Files under /proc to what runc
// lets a bind mount land on (libcontainer's checkProcMount): any other
// would fail every sandbox start.
func TestProcViewFilesRuncAllows(t *testing.T) {
	allowed := map[string]bool{"proc/cpuinfo": true, "proc/diskstats": true, "proc/meminfo": true, "proc/stat": true,
		"proc/swaps": true, "proc/uptime": true, "proc/loadavg": true}
	for _, f := range lxcfs.Files {
		if strings.HasPrefix(f, "proc/") && !allowed[f] {
			t.Errorf("runc refuses a bind mount on /%s", f)
		}
	}
}

func TestLXCFSServingRefuses(t *testing.T) {
	dir := t.TempDir()
	// A plain folder that looks like lxcfs is not lxcfs.
	os.MkdirAll(filepath.Join(dir, "proc"), 0o755)
	os.WriteFile(filepath.Join(dir, "proc/meminfo"), []byte("MemTotal: 1 kB\n"), 0o644)
	for _, d := range []string{"", dir, filepath.Join(dir, "missing")} {
		if _, err := lxcfs.Serving(d); err == nil {
			t.Errorf("%q: taken for lxcfs", d)
		}
	}
	r := &Runtime{lxcfsDir: dir}
	if r.procView() != nil {
		t.Fatal("a folder that is not lxcfs gave mounts")
	}
	if !strings.Contains(r.ProcViewProblem(), "not a FUSE mount") {
		t.Fatalf("problem: %q", r.ProcViewProblem())
	}
}

package isolation

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// mountTable is what a sandbox reads of its mounts, and its kernel
// command line.
const mountTable = "cat /proc/self/mountinfo /proc/self/mounts /proc/self/mountstats; echo cmdline=$(wc -c < /proc/cmdline)"

// checkView fails unless the mount table out names none of forbidden but
// on the lines of the mount points in residue.
func checkView(t *testing.T, out string, forbidden, residue []string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		mp := ""
		switch {
		case len(f) > 4 && strings.Contains(line, " - "): // mountinfo
			mp = f[4]
		case len(f) > 4 && f[0] == "device": // mountstats
			mp = f[4]
		case len(f) > 1: // mounts
			mp = f[1]
		}
		for _, s := range forbidden {
			if strings.Contains(line, s) && !slices.Contains(residue, mp) {
				t.Errorf("the sandbox sees %q: %s", s, line)
			}
		}
	}
}

// noMountsUnder fails if anything is mounted below dir on the host.
func noMountsUnder(t *testing.T, dir string) {
	t.Helper()
	m, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range m {
		t.Errorf("left mounted on the host: %s", mi.Mountpoint)
	}
}

// TestSandboxHostView starts a sandbox and reads what it sees of the
// host: its mount table names neither the runtime's state folder nor the
// sandbox's id (the caller's own /workspace and /tmp folders, bound as they
// are, show on their lines alone), its kernel command line reads empty,
// and nothing the start mounted stays mounted on the host.
func TestSandboxHostView(t *testing.T) {
	r := newTestRuntime(t)
	if !r.overlay {
		t.Fatal("this host has overlayfs: the probe must find it")
	}
	// After the sandbox's Stop (cleanups run last first): nothing left.
	t.Cleanup(func() {
		noMountsUnder(t, r.stateDir)
		if ents, _ := os.ReadDir(filepath.Join(r.stateDir, "sandboxes")); len(ents) != 0 {
			t.Errorf("sandbox folders left: %d", len(ents))
		}
	})
	sb := startTestSandbox(t, r, "hostview-a1b2")
	noMountsUnder(t, r.stateDir)
	m, out := run(t, sb, "shell", mountTable)
	if m.ExitCode != 0 || !strings.Contains(out, " / ") {
		t.Fatalf("mount table: %+v %q", m, out)
	}
	if !strings.Contains(out, "cmdline=0\n") {
		t.Errorf("/proc/cmdline is not empty in the sandbox")
	}
	checkView(t, out, []string{r.stateDir, "hostview-a1b2"}, nil)
	checkView(t, out, []string{filepath.Dir(sb.Tmp())}, []string{"/workspace", "/tmp"})
	for _, want := range []string{"tmpfs sandbox", "overlay sandbox", "lowerdir=/proc/self/fd/"} {
		if !strings.Contains(out, want) {
			t.Errorf("the mount table has no %q", want)
		}
	}
	// What the sandbox needs is there, read-only.
	m, out = run(t, sb, "shell", "test -s /etc/ld.so.cache && grep -c '^sandbox:' /etc/passwd && touch /etc/x /x 2>&1 | grep -c Read-only")
	if m.ExitCode != 0 || out != "1\n2\n" {
		t.Fatalf("/etc and / in the sandbox: %+v %q", m, out)
	}
}

// TestSandboxHostViewWithoutOverlay is a host without overlayfs: the
// sandbox starts, its root still hides its folder, and its /etc shows the
// runtime's state folder, as documented.
func TestSandboxHostViewWithoutOverlay(t *testing.T) {
	r := newTestRuntime(t)
	r.overlay = false
	sb := startTestSandbox(t, r, "hostview-c3d4")
	noMountsUnder(t, r.stateDir)
	m, out := run(t, sb, "shell", mountTable)
	if m.ExitCode != 0 {
		t.Fatalf("mount table: %+v %q", m, out)
	}
	checkView(t, out, []string{r.stateDir, "hostview-c3d4"}, []string{"/etc"})
	if !strings.Contains(out, r.etcDir+" /etc ") {
		t.Errorf("without overlayfs /etc is bound as it is:\n%s", out)
	}
	if !r.Info().ShowsHostPaths {
		t.Error("Info must say the mount table shows host paths")
	}
}

// TestCleanupUnmountsView is a daemon that died while a sandbox started,
// its view mounted (twice over, by a second attempt): Cleanup unmounts it
// before it removes the sandbox's folder.
func TestCleanupUnmountsView(t *testing.T) {
	r := newTestRuntime(t)
	p := r.pathsOf("hostview-e5f6")
	for i := 0; i < 2; i++ {
		if _, err := r.mountView(p, r.host, "", false); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(p.dir)); len(m) != 4 {
		t.Fatalf("want the root twice and /etc twice mounted, got %d mounts", len(m))
	}
	if err := r.Cleanup("hostview-e5f6"); err != nil {
		t.Fatal(err)
	}
	noMountsUnder(t, r.stateDir)
	if ents, _ := os.ReadDir(filepath.Join(r.stateDir, "sandboxes")); len(ents) != 0 {
		t.Fatalf("sandbox folders left: %d", len(ents))
	}
	// The shared /etc was never the folder's to remove.
	if _, err := os.Stat(filepath.Join(r.etcDir, "passwd")); err != nil {
		t.Fatal(err)
	}
}

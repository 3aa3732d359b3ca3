package isolation_test

// The host view's tests that start a sandbox: outside the package, so
// that they can use runc's engine (package runc imports isolation).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/isolationtest"
	"github.com/sandboxd/sandboxd/isolation/runc"
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
	r := isolationtest.NewRuntime(t, "sandboxd-test", map[string]isolation.NewEngine{isolation.RuntimeRunc: runc.New})
	if !r.Overlay() {
		t.Fatal("this host has overlayfs: the probe must find it")
	}
	// After the sandbox's Stop (cleanups run last first): nothing left.
	t.Cleanup(func() {
		noMountsUnder(t, r.StateDir())
		if ents, _ := os.ReadDir(filepath.Join(r.StateDir(), "sandboxes")); len(ents) != 0 {
			t.Errorf("sandbox folders left: %d", len(ents))
		}
	})
	sb := isolationtest.Start(t, r, "hostview-a1b2")
	noMountsUnder(t, r.StateDir())
	m, out := isolationtest.Run(t, sb, "shell", mountTable)
	if m.ExitCode != 0 || !strings.Contains(out, " / ") {
		t.Fatalf("mount table: %+v %q", m, out)
	}
	if !strings.Contains(out, "cmdline=0\n") {
		t.Errorf("/proc/cmdline is not empty in the sandbox")
	}
	checkView(t, out, []string{r.StateDir(), "hostview-a1b2"}, nil)
	checkView(t, out, []string{filepath.Dir(sb.Tmp())}, []string{"/workspace", "/tmp"})
	for _, want := range []string{"tmpfs sandbox", "overlay sandbox", "lowerdir=/proc/self/fd/"} {
		if !strings.Contains(out, want) {
			t.Errorf("the mount table has no %q", want)
		}
	}
	// What the sandbox needs is there, read-only.
	m, out = isolationtest.Run(t, sb, "shell", "test -s /etc/ld.so.cache && grep -c '^sandbox:' /etc/passwd && touch /etc/x /x 2>&1 | grep -c Read-only")
	if m.ExitCode != 0 || out != "1\n2\n" {
		t.Fatalf("/etc and / in the sandbox: %+v %q", m, out)
	}

	// A template's user: its own /etc, hidden as the image's is, and
	// the workspace at its home too.
	u := isolationtest.StartAs(t, r, "hostview-u5e6", isolation.User{Name: "user", Home: "/home/user"})
	noMountsUnder(t, r.StateDir())
	m, out = isolationtest.Run(t, u, "shell", mountTable)
	if m.ExitCode != 0 {
		t.Fatalf("mount table: %+v %q", m, out)
	}
	checkView(t, out, []string{r.StateDir(), "hostview-u5e6"}, nil)
	checkView(t, out, []string{filepath.Dir(u.Tmp())}, []string{"/workspace", "/tmp", "/home/user"})
	m, out = isolationtest.Run(t, u, "shell", "whoami; echo $HOME; pwd; grep -c '^sandbox:' /etc/passwd; echo x > /home/user/f; cat /workspace/f; touch /home/x 2>&1 | grep -c Read-only")
	if m.ExitCode != 0 || out != "user\n/home/user\n/home/user\n0\nx\n1\n" {
		t.Fatalf("a template user's sandbox: %+v %q", m, out)
	}
}

// TestSandboxHostViewWithoutOverlay is a host without overlayfs: the
// sandbox starts, its root still hides its folder, and its /etc shows the
// runtime's state folder, as documented.
func TestSandboxHostViewWithoutOverlay(t *testing.T) {
	r := isolationtest.NewRuntime(t, "sandboxd-test", map[string]isolation.NewEngine{isolation.RuntimeRunc: runc.New})
	r.SetOverlay(false)
	sb := isolationtest.Start(t, r, "hostview-c3d4")
	noMountsUnder(t, r.StateDir())
	m, out := isolationtest.Run(t, sb, "shell", mountTable)
	if m.ExitCode != 0 {
		t.Fatalf("mount table: %+v %q", m, out)
	}
	checkView(t, out, []string{r.StateDir(), "hostview-c3d4"}, []string{"/etc"})
	if !strings.Contains(out, r.EtcDir()+" /etc ") {
		t.Errorf("without overlayfs /etc is bound as it is:\n%s", out)
	}
	if !r.Info().ShowsHostPaths {
		t.Error("Info must say the mount table shows host paths")
	}
	u := isolationtest.StartAs(t, r, "hostview-u7f8", isolation.User{Name: "user", Home: "/home/user"})
	if m, out := isolationtest.Run(t, u, "shell", "whoami; pwd; ls /home"); m.ExitCode != 0 || out != "user\n/home/user\nuser\n" {
		t.Fatalf("a template user's sandbox without overlayfs: %+v %q", m, out)
	}
}

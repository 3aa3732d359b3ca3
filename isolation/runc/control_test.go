package runc

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/agent"
	"github.com/sandboxd/sandboxd/isolation/isolationtest"
)

// TestFreezeThaw: a frozen sandbox is paused (every process stopped by the
// freezer) and a thawed one runs on with its state.
func TestFreezeThaw(t *testing.T) {
	r := newTestRuntime(t)
	sb := startTestSandbox(t, r, "freeze1")
	isolationtest.Run(t, sb, "python", "x = 5")
	if err := sb.Freeze(); err != nil {
		t.Fatal(err)
	}
	if st, err := sb.Container().(runcContainer).c.Status(); err != nil || st != libcontainer.Paused {
		t.Fatalf("frozen sandbox is %v (%v)", st, err)
	}
	if err := sb.Thaw(); err != nil {
		t.Fatal(err)
	}
	if m, _ := isolationtest.Run(t, sb, "python", "x + 1"); m.Result == nil || *m.Result != "6" {
		t.Fatalf("after thaw: %+v", m)
	}
	if v := sb.AgentVersion(); v != agent.ProtocolVersion {
		t.Fatalf("agent version %d, want %d", v, agent.ProtocolVersion)
	}
}

// TestJoinNetworkNamespace: a sandbox given a network namespace made
// outside (as the network code will) runs in it.
func TestJoinNetworkNamespace(t *testing.T) {
	r := newTestRuntime(t)
	name := "sbdtest-" + newTestID()
	t.Cleanup(func() { _ = netns.DeleteNamed(name) })
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		orig, err := netns.Get()
		if err != nil {
			t.Fatal(err)
		}
		defer orig.Close()
		defer netns.Set(orig)
		ns, err := netns.NewNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		// A mark only this namespace has: its loopback up, and a per-
		// namespace setting changed.
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_default_ttl", []byte("42"), 0); err != nil {
			t.Fatal(err)
		}
	}()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := r.Start(context.Background(), &isolation.Spec{ID: "netns1", Workspace: ws, Tmp: filepath.Join(dir, "tmp"),
		Limits: isolation.Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 128}, NetNS: filepath.Join("/var/run/netns", name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Stop() })
	_, out := isolationtest.Run(t, sb, "shell", "cat /proc/sys/net/ipv4/ip_default_ttl")
	if strings.TrimSpace(out) != "42" {
		t.Fatalf("the sandbox is not in the namespace given: ip_default_ttl is %q, set to 42 there", out)
	}
}

func newTestID() string {
	b := make([]byte, 4)
	f, _ := os.Open("/dev/urandom")
	defer f.Close()
	_, _ = f.Read(b)
	const hex = "0123456789abcdef"
	out := make([]byte, 8)
	for i, c := range b {
		out[2*i], out[2*i+1] = hex[c>>4], hex[c&15]
	}
	return string(out)
}

package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/daemon/node"
	"github.com/sandboxd/sandboxd/daemon/pool"
	"github.com/sandboxd/sandboxd/internal/version"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// testMachineID is a made-up /etc/machine-id; testNodeID is what it and
// the unit tests' instance id ("test") give (computed apart, with
// Python's hmac).
const (
	testMachineID = "0123456789abcdef0123456789abcdef"
	testNodeID    = "91e62c8b5eb7418dba7e46b70dd5928e"
)

// fakeNodeHost is a host of 2 GiB and 6 CPUs named node-a, its files in
// dir.
func fakeNodeHost(t *testing.T, machineID string) *node.Host {
	t.Helper()
	dir := t.TempDir()
	h := &node.Host{MachineID: filepath.Join(dir, "machine-id"), Meminfo: filepath.Join(dir, "meminfo"), CPUs: 6,
		Hostname: func() (string, error) { return "node-a", nil }}
	writeFile(t, h.Meminfo, "MemTotal:        2097152 kB\nMemFree:          1048576 kB\n")
	if machineID != "" {
		writeFile(t, h.MachineID, machineID+"\n")
	}
	return h
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNode checks every field of GET /v1/node, as root, as a user with
// sessions of its own and as a user with none: capacity is the host's for
// everyone; sessions, allocation, templates and pools are what the caller
// may see, as in /v1/info.
func TestNode(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.PoolSize = 1
		c.MaxSessions = 10
		c.Node.Labels = map[string]string{"zone": "a", "gpu": "none"}
	})
	e.host = fakeNodeHost(t, testMachineID)
	// A template whose packages went while the daemon was down cannot
	// start a session: not offered.
	st, err := openStore(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutTemplate(&store.Template{Name: "gone", Rootfs: api.RootfsHost, Packages: []string{"numpy"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d := e.start()
	alice, bob := as(1000), as(2000)
	create := func(ctx context.Context, mem int64, cpus float64) string {
		t.Helper()
		s, err := d.CreateSession(ctx, &api.CreateSessionRequest{MemoryMB: &mem, CPUs: &cpus})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	// Root: two running (0.1 + 0.2 CPUs: a sum that is not exact in
	// binary). Alice: one running, one stopped, one failed.
	create(root, 256, 0.1)
	create(root, 64, 0.2)
	create(alice, 128, 0.25)
	stopped := create(alice, 64, 1)
	if _, err := d.StopSession(alice, stopped); err != nil {
		t.Fatal(err)
	}
	ev := watchEvents(t, d)
	failed := create(alice, 64, 1)
	e.h.box(failed).die(isolation.ExitInfo{Known: true, Signal: syscall.SIGKILL})
	ev.waitFor(t, failed, api.ActionFailed)
	for _, tm := range []struct {
		ctx  context.Context
		name string
	}{{root, "data"}, {alice, "mine"}, {bob, "theirs"}} {
		if _, err := d.Templates().AddTemplate(tm.ctx, &api.Template{Name: tm.name}); err != nil {
			t.Fatal(err)
		}
	}
	waitPool(t, d, 1)

	host := api.NodeResources{MemoryMB: 2048, CPUs: 6, Sessions: 10}
	common := api.Node{NodeID: testNodeID, Hostname: "node-a", Version: version.Version, State: api.NodeReady,
		Labels: map[string]string{"zone": "a", "gpu": "none"}, Capacity: host, Runtimes: []string{api.RuntimeRunc, api.RuntimeRunsc}}
	fill := func(ready, target int) api.NodePool { return api.NodePool{Ready: ready, Target: target} }
	with := func(n api.Node, alloc api.NodeResources, by api.NodeSessions, templates ...string) api.Node {
		n.Allocated, n.SessionsByStatus, n.Templates = alloc, by, templates
		n.Pools = map[string]api.NodePool{}
		for _, name := range templates {
			n.Pools[name] = fill(0, 0)
		}
		n.Pools[pool.DefaultTemplate] = fill(1, 1)
		return n
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		want api.Node
	}{
		{"root", root, with(common, api.NodeResources{MemoryMB: 256 + 64 + 128, CPUs: 0.55, Sessions: 3},
			api.NodeSessions{Running: 3, Stopped: 1, Failed: 1}, "1000/mine", "2000/theirs", "data", pool.DefaultTemplate)},
		{"alice", alice, with(common, api.NodeResources{MemoryMB: 128, CPUs: 0.25, Sessions: 1},
			api.NodeSessions{Running: 1, Stopped: 1, Failed: 1}, "1000/mine", "data", pool.DefaultTemplate)},
		{"bob", bob, with(common, api.NodeResources{}, api.NodeSessions{}, "2000/theirs", "data", pool.DefaultTemplate)},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := d.node.Node(c.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*n, c.want) {
				t.Errorf("got  %+v\nwant %+v", *n, c.want)
			}
		})
	}

	// The answer is a copy: changing it changes nothing of the daemon's.
	n, _ := d.node.Node(root)
	n.Labels["zone"] = "b"
	if n, _ := d.node.Node(root); n.Labels["zone"] != "a" {
		t.Errorf("the config's labels changed through an answer: %v", n.Labels)
	}
}

// TestNodeEmpty: a daemon with no labels, sessions, pools nor usable
// runtime answers empty objects and lists, never null, so that a
// scheduler's decoder needs no special case.
func TestNodeEmpty(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Node.Labels = nil })
	e.host = fakeNodeHost(t, testMachineID)
	for i := range e.h.runtimes {
		e.h.runtimes[i].Usable = false
	}
	// No template it can start: the built-in one's name taken by a record
	// whose packages are gone.
	st, err := openStore(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutTemplate(&store.Template{Name: pool.DefaultTemplate, Rootfs: api.RootfsHost, Packages: []string{"numpy"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d := e.start()
	n, err := d.node.Node(root)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(n)
	for _, want := range []string{`"labels":{}`, `"pools":{}`, `"templates":[]`, `"runtimes":[]`,
		`"allocated":{"memory_mb":0,"cpus":0,"sessions":0}`, `"sessions_by_status":{"running":0,"paused":0,"hibernated":0,"stopped":0,"failed":0}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

// TestNodeRuntimes: runtimes are those a session can ask for: usable on
// the host and, with strict_runtime, the default alone.
func TestNodeRuntimes(t *testing.T) {
	for _, c := range []struct {
		name        string
		runscUsable bool
		defaultRT   string
		strict      bool
		want        []string
	}{
		{"both", true, api.RuntimeRunc, false, []string{api.RuntimeRunc, api.RuntimeRunsc}},
		{"runsc missing", false, api.RuntimeRunc, false, []string{api.RuntimeRunc}},
		{"strict runsc", true, api.RuntimeRunsc, true, []string{api.RuntimeRunsc}},
		{"strict runc", true, api.RuntimeRunc, true, []string{api.RuntimeRunc}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *config.Config) { cfg.DefaultRuntime, cfg.StrictRuntime = c.defaultRT, c.strict })
			e.host = fakeNodeHost(t, testMachineID)
			e.h.runtimes[1].Usable = c.runscUsable
			d := e.start()
			n, err := d.node.Node(root)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(n.Runtimes, c.want) {
				t.Errorf("runtimes %v, want %v", n.Runtimes, c.want)
			}
			// /v1/info still lists every runtime, with why one is not usable.
			if info, _ := d.Info(root); len(info.Runtimes) != 2 {
				t.Errorf("info lists %+v", info.Runtimes)
			}
		})
	}
}

// TestNodeIDStable: the node id outlives a restart, derived or random.
func TestNodeIDStable(t *testing.T) {
	for _, c := range []struct{ name, machineID string }{{"from the machine id", testMachineID}, {"random", ""}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.host = fakeNodeHost(t, c.machineID)
			d := e.start()
			first, err := d.node.Node(root)
			if err != nil {
				t.Fatal(err)
			}
			if c.machineID != "" && first.NodeID != testNodeID {
				t.Errorf("node id %s, want %s", first.NodeID, testNodeID)
			}
			if err := d.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			again, err := e.start().node.Node(root)
			if err != nil {
				t.Fatal(err)
			}
			if again.NodeID != first.NodeID || len(first.NodeID) != 32 {
				t.Errorf("node id %q after a restart, %q before", again.NodeID, first.NodeID)
			}
		})
	}
}

// TestNodeHostUnreadable: a host whose memory cannot be read answers an
// error, not a capacity of 0 a scheduler would trust.
func TestNodeHostUnreadable(t *testing.T) {
	e := newEnv(t, nil)
	e.host = fakeNodeHost(t, testMachineID)
	d := e.start()
	if err := os.Remove(e.host.Meminfo); err != nil {
		t.Fatal(err)
	}
	if _, err := d.node.Node(root); err == nil {
		t.Fatal("no error without /proc/meminfo")
	}
}

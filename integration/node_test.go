package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestNode asks a real daemon GET /v1/node and `sandboxctl node`: the
// host's capacity, the config's labels, a node id that survives a restart
// and does not show the machine id, and what a running session holds —
// which another user does not see.
func TestNode(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "max_sessions = 7\n[node]\nlabels = {zone = \"it\", rack = \"r1\"}\n")
	get := func() api.Node {
		t.Helper()
		status, body := d.raw(t, "GET", "/v1/node", "")
		if status != http.StatusOK {
			t.Fatalf("GET /v1/node: %d %s", status, body)
		}
		var n api.Node
		if err := json.Unmarshal(body, &n); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return n
	}
	first := get()
	d.terminate()
	d.launch()
	n := get()
	if n.NodeID != first.NodeID || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(n.NodeID) {
		t.Errorf("node id %q after a restart, %q before", n.NodeID, first.NodeID)
	}
	if m, err := os.ReadFile("/etc/machine-id"); err == nil && strings.Contains(n.NodeID, strings.TrimSpace(string(m))) {
		t.Errorf("the node id %s shows the machine id", n.NodeID)
	}
	hostname, _ := os.Hostname()
	if n.Hostname != hostname || n.Version == "" || n.State != api.NodeReady ||
		!reflect.DeepEqual(n.Labels, map[string]string{"zone": "it", "rack": "r1"}) {
		t.Errorf("node: %+v", n)
	}
	if want := (api.NodeResources{MemoryMB: memTotalMB(t), CPUs: float64(runtime.NumCPU()), Sessions: 7}); n.Capacity != want {
		t.Errorf("capacity %+v, want %+v", n.Capacity, want)
	}
	// Every runtime /v1/info calls usable (runsc too, on hosts that have
	// it: make test's do), and none other.
	_, body := d.raw(t, "GET", "/v1/info", "")
	var info api.Info
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	usable := []string{}
	for _, r := range info.Runtimes {
		if r.Usable {
			usable = append(usable, r.Name)
		}
	}
	if !slices.Equal(n.Runtimes, usable) {
		t.Errorf("node runtimes %v, usable ones in /v1/info %v", n.Runtimes, usable)
	}
	if !slices.Contains(n.Runtimes, api.RuntimeRunc) || !slices.Contains(n.Templates, "python") ||
		n.Pools["python"] != (api.NodePool{Ready: 0, Target: 0}) {
		t.Errorf("runtimes %v, templates %v, pools %v", n.Runtimes, n.Templates, n.Pools)
	}

	mem, cpus := int64(128), 0.5
	d.session(t, &api.CreateSessionRequest{MemoryMB: &mem, CPUs: &cpus})
	out, stderr, code := d.ctl(t, "", "node", "--json")
	if code != 0 {
		t.Fatalf("sandboxctl node --json: %d %s", code, stderr)
	}
	var fromCtl api.Node
	if err := json.Unmarshal([]byte(out), &fromCtl); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if fromCtl.Allocated != (api.NodeResources{MemoryMB: 128, CPUs: 0.5, Sessions: 1}) ||
		fromCtl.SessionsByStatus != (api.NodeSessions{Running: 1}) {
		t.Errorf("with a session: allocated %+v, sessions %+v", fromCtl.Allocated, fromCtl.SessionsByStatus)
	}
	if n := get(); !reflect.DeepEqual(n, fromCtl) {
		t.Errorf("sandboxctl node --json differs from GET /v1/node:\n%+v\n%+v", fromCtl, n)
	}
	if !slices.Contains(fromCtl.Runtimes, api.RuntimeRunc) {
		t.Errorf("runtimes %v lack runc", fromCtl.Runtimes)
	}
	out, _, _ = d.ctl(t, "", "node")
	for _, want := range []string{"Node id:         " + n.NodeID, "State:           ready", "Labels:          rack=r1, zone=it",
		"Allocated:       memory 128MB, cpus 0.5, sessions 1", "Runtimes:        runc"} {
		if !strings.Contains(out, want) {
			t.Errorf("sandboxctl node lacks %q:\n%s", want, out)
		}
	}

	// Another user sees the host, not root's session.
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runCtl(t, d.socket, otherUser, "", "node", "--json")
	var theirs api.Node
	if code != 0 || json.Unmarshal([]byte(out), &theirs) != nil {
		t.Fatalf("another user's sandboxctl node --json: %d %s %s", code, out, stderr)
	}
	if theirs.Capacity != fromCtl.Capacity || theirs.Allocated != (api.NodeResources{}) || theirs.SessionsByStatus != (api.NodeSessions{}) {
		t.Errorf("another user sees capacity %+v, allocated %+v, sessions %+v", theirs.Capacity, theirs.Allocated, theirs.SessionsByStatus)
	}
}

// memTotalMB is the host's MemTotal in MiB.
func memTotalMB(t *testing.T) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb >> 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// TestNodeDrain: sandboxctl node drain refuses new sessions (503 with
// Retry-After) while running ones go on, --wait returns once none runs,
// --off takes sessions again; only root drains.
func TestNodeDrain(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "", raced)
	ctx := context.Background()
	id := d.session(t, nil)
	if err := os.Chmod(d.socket, 0o666); err != nil { // another user reaches the daemon
		t.Fatal(err)
	}
	if _, stderr, code := runCtl(t, d.socket, otherUser, "", "node", "drain"); code == 0 || !strings.Contains(stderr, "only root may drain the node") {
		t.Fatalf("a user's drain: %d %s", code, stderr)
	}
	wait := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "node", "drain", "--wait", "--interval", "100ms")
	var out, stderr testutil.Buffer
	wait.Stdout, wait.Stderr = &out, &stderr
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "waiting for 1 running session") {
		if time.Now().After(deadline) {
			t.Fatalf("drain --wait: %s %s", out.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := d.raw(t, "POST", "/v1/sessions", `{}`); code != 503 || !strings.Contains(string(body), "draining") {
		t.Errorf("a create while draining: %d %s", code, body)
	}
	if _, err := d.c.CreateSession(ctx, nil); !errdefs.IsUnavailable(err) {
		t.Errorf("a create while draining: %v", err)
	} else if after, ok := api.RetryAfter(err); !ok || after != 30*time.Second {
		t.Errorf("a create while draining says Retry-After %v (%v), want 30s", after, ok)
	}
	if _, stderr, code := d.ctl(t, "", "run", "-c", "1"); code == 0 || !strings.Contains(stderr, "draining") {
		t.Errorf("a run while draining: %d %s", code, stderr)
	}
	if e := d.py(t, id, "print('runs on')"); e.Stdout != "runs on\n" {
		t.Errorf("a session while draining: %+v", e)
	}
	if n, _ := d.c.Node(ctx); n.State != api.NodeDraining {
		t.Errorf("node state %s", n.State)
	}
	// Paused, the session runs no more: --wait returns.
	if _, err := d.c.PauseSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "is draining") {
			t.Errorf("drain --wait: %v %s %s", err, out.String(), stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = wait.Process.Kill()
		t.Fatal("drain --wait did not return once no session ran")
	}
	if out, stderr, code := d.ctl(t, "", "node", "drain", "--off"); code != 0 || !strings.Contains(out, "is ready") {
		t.Fatalf("drain --off: %d %s %s", code, out, stderr)
	}
	d.session(t, nil)
}

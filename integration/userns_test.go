package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// hostOwner is the host uid and gid of a file in a session's workspace.
func (d *daemon) hostOwner(t *testing.T, id, name string) (int, int) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(d.base, "data", "sessions", id, "fs", "workspace", name))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// idBase is where a session's user namespace starts on the host, as the
// sandbox sees it in its uid_map.
func (d *daemon) idBase(t *testing.T, id string) int {
	t.Helper()
	e := d.sh(t, id, "awk '{print $1, $2, $3}' /proc/self/uid_map; awk '{print $1, $2, $3}' /proc/self/gid_map")
	f := strings.Fields(e.Stdout)
	if len(f) != 6 || f[0] != "0" || f[2] != "65536" || f[1] != f[4] || f[3] != "0" {
		t.Fatalf("uid_map and gid_map must map 0-65535 to one host block: %q", e.Stdout)
	}
	base, _ := strconv.Atoi(f[1])
	return base
}

func (d *daemon) info(t *testing.T) api.Info {
	t.Helper()
	var info api.Info
	_, b := d.raw(t, "GET", "/v1/info", "")
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	return info
}

// TestUserNamespaces checks each session has its own block of host ids,
// that its files carry them on the host and uid 1000 inside (uploads too),
// and that the block is the session's for its whole life.
func TestUserNamespaces(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	a, b := d.session(t, nil), d.session(t, nil)
	baseA, baseB := d.idBase(t, a), d.idBase(t, b)
	info := d.info(t)
	if !info.UserNS.Enabled || info.UserNS.InUse != 2 || info.SandboxUID != 1000 {
		t.Fatalf("info: %+v sandbox_uid %d", info.UserNS, info.SandboxUID)
	}
	for _, base := range []int{baseA, baseB} {
		if base < int(info.UserNS.IDBase) || base >= int(info.UserNS.IDBase)+info.UserNS.Blocks*65536 || (base-int(info.UserNS.IDBase))%65536 != 0 {
			t.Fatalf("block %d is not one of the range %+v", base, info.UserNS)
		}
	}
	if baseA == baseB {
		t.Fatalf("two sessions share the id block %d", baseA)
	}

	// Seen from the host, every process of the sandbox runs as an id of
	// the session's block: an escape lands as nobody the host knows.
	d.sh(t, a, "sleep 30 >/dev/null 2>&1 &")
	procs := sandboxProcs(t, a)
	if len(procs) < 2 {
		t.Fatalf("found %d processes of session %s on the host", len(procs), a)
	}
	for _, pid := range procs {
		b, _ := os.ReadFile(filepath.Join("/proc", pid, "status"))
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "Uid:") && !strings.HasPrefix(line, "Gid:") {
				continue
			}
			for _, f := range strings.Fields(line)[1:] {
				if n, _ := strconv.Atoi(f); n < baseA || n >= baseA+65536 {
					t.Fatalf("process %s runs with host id %d, outside its block at %d: %s", pid, n, baseA, line)
				}
			}
		}
	}

	d.sh(t, a, "echo made > /workspace/made.txt")
	if uid, gid := d.hostOwner(t, a, "made.txt"); uid != baseA+1000 || gid != baseA+1000 {
		t.Fatalf("a file made inside is owned by %d:%d on the host, want %d", uid, gid, baseA+1000)
	}
	if _, err := d.c.PutFile(ctx, a, "/workspace/up.txt", strings.NewReader("up")); err != nil {
		t.Fatal(err)
	}
	if uid, _ := d.hostOwner(t, a, "up.txt"); uid != baseA+1000 {
		t.Fatalf("an upload is owned by %d on the host, want %d", uid, baseA+1000)
	}
	if e := d.sh(t, a, "stat -c '%u:%g %U' /workspace/up.txt /workspace/made.txt && echo more >> /workspace/up.txt && cat /workspace/up.txt"); e.Stdout != "1000:1000 sandbox\n1000:1000 sandbox\nupmore\n" {
		t.Fatalf("inside, files belong to the sandbox user: %q %q", e.Stdout, e.Stderr)
	}
	// Session b cannot reach a's files, and its ids own nothing of a's.
	if e := d.sh(t, b, "ls /workspace"); strings.Contains(e.Stdout, "made.txt") {
		t.Fatal("session b sees a's workspace")
	}

	// The block stays with the session across a stop and a start.
	if _, err := d.c.StopSession(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.StartSession(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := d.idBase(t, a); got != baseA {
		t.Fatalf("after a restart the session's block moved from %d to %d", baseA, got)
	}
	if err := d.c.DeleteSession(ctx, b); err != nil {
		t.Fatal(err)
	}
	if info := d.info(t); info.UserNS.InUse != 1 {
		t.Fatalf("a deleted session's block is given back: %+v", info.UserNS)
	}
}

// TestUserNamespacesOff checks the off switch, and that a workspace made
// with user namespaces moves to the plain sandbox uid when they are turned
// off (and back).
func TestUserNamespacesOff(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	ctx := context.Background()
	id := d.session(t, nil)
	base := d.idBase(t, id)
	d.sh(t, id, "mkdir -p /workspace/dir && echo x > /workspace/dir/f && ln -s /etc/passwd /workspace/link")

	// A running session keeps its ids across daemon restarts; a stopped one
	// gets the new setting at its next start.
	setConfig := func(extra string) {
		if _, err := d.c.StopSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		d.config = extra // written at the next launch
		d.crash()
		d.launch()
		if _, err := d.c.StartSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	setConfig("[userns]\nenabled = false\n")
	info := d.info(t)
	if info.UserNS.Enabled || info.SandboxUID != 2000000 {
		t.Fatalf("info with userns off: %+v sandbox_uid %d", info.UserNS, info.SandboxUID)
	}
	if e := d.sh(t, id, "id -u; cat /workspace/dir/f; echo y >> /workspace/dir/f && echo wrote"); e.Stdout != "2000000\nx\nwrote\n" {
		t.Fatalf("with userns off: %q %q", e.Stdout, e.Stderr)
	}
	for _, name := range []string{"dir", "dir/f", "link"} {
		if uid, gid := d.hostOwner(t, id, name); uid != 2000000 || gid != 2000000 {
			t.Fatalf("%s is owned by %d:%d, want the sandbox uid", name, uid, gid)
		}
	}
	if fi, err := os.Stat("/etc/passwd"); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("a symlink in the workspace must be changed itself, not followed")
	}

	setConfig("")
	newBase := d.idBase(t, id)
	if uid, _ := d.hostOwner(t, id, "dir/f"); uid != newBase+1000 {
		t.Fatalf("back on: owned by %d, want %d (block was %d)", uid, newBase+1000, base)
	}
}

// sandboxProcs lists the host pids of a session's processes, found by
// their cgroup.
func sandboxProcs(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "/"+id+"\n") {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

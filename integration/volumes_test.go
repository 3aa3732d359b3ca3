package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// TestVolumes: a volume two sessions of different id blocks mount at once,
// each writing as its own user and reading the other's files; its quota; a
// read-only mount; 409 while mounted; another user's 404; its files across
// a daemon restart; the CLI's verbs.
func TestVolumes(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		if _, err := d.c.CreateVolume(ctx, api.CreateVolumeRequest{Name: "data", SizeMB: 32}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.CreateVolume(ctx, api.CreateVolumeRequest{Name: "data", SizeMB: 32}); !errdefs.IsConflict(err) && !errdefs.IsAlreadyExists(err) {
			t.Fatalf("a second volume of the name: %v", err)
		}
		if _, err := d.c.CreateVolume(ctx, api.CreateVolumeRequest{Name: "tiny", SizeMB: 1}); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("a 1 MB volume: %v", err)
		}
		// Files without a session, the sessions' user's.
		if _, stderr, code := d.ctl(t, "seed\n", "volume", "cp", "-", "data:/in/seed"); code != 0 {
			t.Fatalf("volume cp to: %d %q", code, stderr)
		}
		a := d.session(t, &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "data", Path: "/data"}}})
		if x := d.sh(t, a, `cat /data/in/seed && `+owner("/data/in/seed")+` && echo more >> /data/in/seed`); x.ExitCode != 0 || x.Stdout != "seed\n1000 sandbox\n" {
			t.Fatalf("a file the API wrote: %+v", x)
		}
		if out, stderr, code := d.ctl(t, "", "volume", "cp", "data:/in/seed", "-"); code != 0 || out != "seed\nmore\n" {
			t.Fatalf("volume cp from: %d %q %q", code, out, stderr)
		}
		if _, list, err := d.c.GetVolumeFile(ctx, "data", "/"); err != nil || list == nil || len(list.Entries) != 1 || list.Entries[0].Name != "in" {
			t.Fatalf("the volume's root: %+v %v", list, err)
		}
		for _, p := range []string{"/big", "/in"} {
			if err := d.c.DeleteVolumeFile(ctx, "data", p); err != nil && !(p == "/big" && errdefs.IsNotFound(err)) {
				t.Fatalf("delete %s: %v", p, err)
			}
		}
		if _, _, err := d.c.GetVolumeFile(ctx, "data", "/../etc/passwd"); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("a path with ..: %v", err)
		}
		b := d.session(t, &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "data", Path: "/mnt/shared"}}})

		// Owners through python's stat: coreutils' statx answers EINVAL
		// under this gVisor whatever the file.
		if x := d.sh(t, a, `echo from-a > /data/f && mkdir /data/dir && `+owner("/data/f")+` && id -u`); x.ExitCode != 0 || x.Stdout != "1000 sandbox\n1000\n" {
			t.Fatalf("a writes: %+v", x)
		}
		if x := d.sh(t, b, `cat /mnt/shared/f && `+owner("/mnt/shared/f")+` && echo from-b >> /mnt/shared/f && touch /mnt/shared/dir/g`); x.ExitCode != 0 || x.Stdout != "from-a\n1000 sandbox\n" {
			t.Fatalf("b reads and writes a's file: %+v", x)
		}
		if x := d.sh(t, a, `cat /data/f; cd /data/dir && echo *`); x.Stdout != "from-a\nfrom-b\ng\n" {
			t.Fatalf("a reads b's writes: %+v", x)
		}
		// What cgroup v2 and systemd change nothing in: the VM leaves it to
		// the host.
		if !testing.Short() {
			volumeRules(t, d, a)
		}

		// Across a daemon restart, the files and the mounts stay; a
		// session stopped and started mounts it again.
		d.bounce("restart")
		if x := d.sh(t, b, `cat /mnt/shared/f`); x.Stdout != "from-a\nfrom-b\n" {
			t.Fatalf("after a restart: %+v", x)
		}
		if _, err := d.c.StopSession(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.StartSession(ctx, b); err != nil {
			t.Fatal(err)
		}
		if x := d.sh(t, b, `cat /mnt/shared/f`); x.Stdout != "from-a\nfrom-b\n" {
			t.Fatalf("after a stop and start: %+v", x)
		}

		for _, id := range []string{a, b} {
			if err := d.c.DeleteSession(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if !testing.Short() {
			volumeCLI(t, d)
		} else if err := d.c.DeleteVolume(ctx, "data"); err != nil {
			t.Fatal(err)
		}
		if vs, err := d.c.Volumes(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("volumes left: %+v %v", vs, err)
		}
	})
}

// owner is a shell command that prints path's owner: uid and name.
func owner(path string) string {
	return `python3 -c 'import os, pwd, sys; u = os.stat(sys.argv[1]).st_uid; print(u, pwd.getpwuid(u).pw_name)' ` + path
}

// volumeRules checks volume data's limits in session a, which mounts it
// at /data: its size (an upload, a write inside), a read-only mount, 409
// while mounted, bad mounts, and other users: none, unless shared.
func volumeRules(t *testing.T, d *daemon, a string) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.c.PutVolumeFile(ctx, "data", "/big", strings.NewReader(strings.Repeat("x", 40<<20))); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("an upload past the volume's size: %v", err)
	}
	// The quota: 32 MB, ENOSPC inside.
	if x := d.sh(t, a, `dd if=/dev/zero of=/data/big bs=1M count=64 2>&1; rm -f /data/big`); !strings.Contains(x.Stdout, "No space left") {
		t.Fatalf("past the quota: %+v", x)
	}
	// Read-only.
	ro := d.session(t, &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "data", Path: "/ro", ReadOnly: true}}})
	if x := d.sh(t, ro, `cat /ro/f >/dev/null && touch /ro/h`); x.ExitCode == 0 || !strings.Contains(x.Stderr+x.Stdout, "Read-only") {
		t.Fatalf("a read-only mount: %+v", x)
	}
	v, err := d.c.Volume(ctx, "data")
	if err != nil || len(v.MountedBy) != 3 || v.SizeMB != 32 || v.UsedMB < 0 {
		t.Fatalf("inspect: %+v %v", v, err)
	}
	if err := d.c.DeleteVolume(ctx, "data"); !errdefs.IsConflict(err) {
		t.Fatalf("delete while mounted: %v", err)
	}
	if err := d.c.DeleteSession(ctx, ro); err != nil {
		t.Fatal(err)
	}
	// Bad mounts: a missing volume, a system folder, two at one path.
	for _, req := range [][]api.VolumeMount{
		{{Name: "nope", Path: "/data"}},
		{{Name: "data", Path: "/usr/data"}},
		{{Name: "data", Path: "/workspace/x"}},
		{{Name: "data", Path: "relative"}},
		{{Name: "data", Path: "/a"}, {Name: "data", Path: "/a"}},
	} {
		if _, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{Volumes: req}); err == nil || !(errdefs.IsNotFound(err) || errdefs.IsInvalidArgument(err)) {
			t.Fatalf("create with %+v: %v", req, err)
		}
	}
	volumeSharing(t, d)
}

// volumeSharing shows another user no volume of root's, unless root
// shares it: then their sessions mount it, as their own user, and see
// the others' files, until sharing ends.
func volumeSharing(t *testing.T, d *daemon) {
	t.Helper()
	ctx := context.Background()
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCtl(t, d.socket, otherUser, "", "volume", "inspect", "data"); code == 0 || !strings.Contains(stderr, "no such volume") {
		t.Fatalf("another user's inspect: %d %q", code, stderr)
	}
	if _, stderr, code := runCtl(t, d.socket, otherUser, "", "create", "--volume", "0/data:/data"); code == 0 || !strings.Contains(stderr, "no such volume") {
		t.Fatalf("another user's mount: %d %q", code, stderr)
	}
	if _, stderr, code := d.ctl(t, "", "volume", "create", "team", "--size", "16", "--share-with", fmt.Sprint(otherUser.Uid)); code != 0 {
		t.Fatalf("volume create --share-with: %d %q", code, stderr)
	}
	if _, err := d.c.PutVolumeFile(ctx, "team", "/notes", strings.NewReader("from root\n")); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCtl(t, d.socket, otherUser, "", "create", "--volume", "0/team:/team")
	if code != 0 {
		t.Fatalf("a shared volume's mount: %d %q", code, stderr)
	}
	theirs := strings.TrimSpace(out)
	if x := d.sh(t, theirs, `cat /team/notes && echo theirs > /team/mine && `+owner("/team/mine")); x.Stdout != "from root\n1000 sandbox\n" {
		t.Fatalf("in the shared volume: %+v", x)
	}
	// Sharing ends only once their sessions are gone; then they find no
	// such volume.
	if _, stderr, code := d.ctl(t, "", "volume", "update", "team", "--no-sharing"); code == 0 || !strings.Contains(stderr, "mounts volume") {
		t.Fatalf("volume update while their session mounts it: %d %q", code, stderr)
	}
	if err := d.c.DeleteSession(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := d.ctl(t, "", "volume", "update", "team", "--no-sharing"); code != 0 {
		t.Fatalf("volume update --no-sharing: %d %q", code, stderr)
	}
	if _, stderr, code := runCtl(t, d.socket, otherUser, "", "create", "--volume", "0/team:/team"); code == 0 || !strings.Contains(stderr, "no such volume") {
		t.Fatalf("a mount once sharing ended: %d %q", code, stderr)
	}
	if err := d.c.DeleteVolume(ctx, "team"); err != nil {
		t.Fatal(err)
	}
}

// volumeCLI uses volume data, mounted by no session, through the CLI: ls,
// a session of its own with -v, rm refused while it runs, then rm.
func volumeCLI(t *testing.T, d *daemon) {
	t.Helper()
	if out, _, code := d.ctl(t, "", "volume", "ls"); code != 0 || !strings.Contains(out, "data") || !strings.Contains(out, "32 MB") {
		t.Fatalf("volume ls: %d %q", code, out)
	}
	out, stderr, code := d.ctl(t, "", "create", "-v", "data:/opt/data:ro")
	if code != 0 {
		t.Fatalf("create -v: %d %q", code, stderr)
	}
	c := strings.TrimSpace(out)
	if x := d.sh(t, c, `cat /opt/data/f`); x.Stdout != "from-a\nfrom-b\n" {
		t.Fatalf("a later session: %+v", x)
	}
	if _, stderr, code := d.ctl(t, "", "volume", "rm", "data"); code == 0 || !strings.Contains(stderr, "mounted") {
		t.Fatalf("volume rm while mounted: %d %q", code, stderr)
	}
	if err := d.c.DeleteSession(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := d.ctl(t, "", "volume", "rm", "data"); code != 0 {
		t.Fatalf("volume rm: %d %q", code, stderr)
	}
}

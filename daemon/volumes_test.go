package daemon

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestVolumes: a volume is its owner's; sessions name it at create and
// their sandboxes get it at the path asked (never from a warm pool); it is
// not deleted while a session's record names it; another user sees none;
// bad requests lose nothing; it outlives a daemon restart.
func TestVolumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.PoolSize = 1 })
	d := e.start()
	vs := d.State().Volumes
	v, err := vs.CreateVolume(as(1000), &api.CreateVolumeRequest{Name: "data", SizeMB: 64})
	if err != nil || v.Name != "data" || v.SizeMB != 64 || v.OwnerUID != 1000 || len(v.MountedBy) != 0 {
		t.Fatalf("create: %+v %v", v, err)
	}
	for name, req := range map[string]*api.CreateVolumeRequest{
		"taken":     {Name: "data", SizeMB: 64},
		"no name":   {SizeMB: 64},
		"bad name":  {Name: "a/b", SizeMB: 64},
		"too small": {Name: "small", SizeMB: 1},
		"too big":   {Name: "big", SizeMB: 1 << 40},
	} {
		if _, err := vs.CreateVolume(as(1000), req); !errdefs.IsInvalidArgument(err) && !errdefs.IsConflict(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another user's name is its own.
	if _, err := vs.CreateVolume(as(1001), &api.CreateVolumeRequest{Name: "data", SizeMB: 16}); err != nil {
		t.Fatal(err)
	}

	s, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "data", Path: "/data", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Volumes) != 1 || s.Volumes[0] != (api.VolumeMount{Name: "data", Path: "/data", ReadOnly: true}) {
		t.Fatalf("the session's volumes: %+v", s.Volumes)
	}
	// A sandbox of its own, started for it: a pooled one's spec has no volumes.
	spec, started := e.h.specOf(s.ID)
	if !started || len(spec.Volumes) != 1 || spec.Volumes[0].Path != "/data" || !spec.Volumes[0].ReadOnly {
		t.Fatalf("the sandbox's spec: started %v, %+v", started, spec.Volumes)
	}
	if fi, err := os.Stat(spec.Volumes[0].Source); err != nil || !fi.IsDir() {
		t.Fatalf("the volume's folder: %v", err)
	}
	if v, err := vs.GetVolume(as(1000), "data"); err != nil || len(v.MountedBy) != 1 || v.MountedBy[0] != s.ID {
		t.Fatalf("mounted by: %+v %v", v, err)
	}
	if err := vs.DeleteVolume(as(1000), "data"); !errdefs.IsConflict(err) {
		t.Fatalf("delete while mounted: %v", err)
	}

	// Refused creates: nothing made.
	for name, ms := range map[string][]api.VolumeMount{
		"missing":   {{Name: "nope", Path: "/data"}},
		"system":    {{Name: "data", Path: "/etc/data"}},
		"workspace": {{Name: "data", Path: "/workspace"}},
		"relative":  {{Name: "data", Path: "data"}},
		"unclean":   {{Name: "data", Path: "/a/../b"}},
		"twice":     {{Name: "data", Path: "/a"}, {Name: "data", Path: "/a"}},
	} {
		if _, err := d.CreateSession(as(1000), &api.CreateSessionRequest{Volumes: ms}); !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another user: its own "data" is another volume; root's view of 1000's
	// names it uid/name.
	if v, err := vs.GetVolume(as(1001), "data"); err != nil || v.OwnerUID != 1001 || len(v.MountedBy) != 0 {
		t.Fatalf("1001's data: %+v %v", v, err)
	}
	if _, err := vs.GetVolume(as(1002), "data"); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's get: %v", err)
	}
	if _, err := vs.GetVolume(as(1002), "1000/data"); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's uid/name: %v", err)
	}
	if v, err := vs.GetVolume(root, "1000/data"); err != nil || v.OwnerUID != 1000 {
		t.Fatalf("root's uid/name: %+v %v", v, err)
	}
	if list, err := vs.ListVolumes(as(1000)); err != nil || len(list) != 1 {
		t.Fatalf("1000's list: %+v %v", list, err)
	}
	if list, err := vs.ListVolumes(root); err != nil || len(list) != 2 {
		t.Fatalf("root's list: %+v %v", list, err)
	}
	// A one-shot run mounts none.
	if _, err := d.newSession(as(1000), &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "data", Path: "/data"}}}, false); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a run with a volume: %v", err)
	}

	// Its files without a session: the root's listing, a write, a read,
	// a delete; nothing out of it.
	if w, err := vs.PutVolumeFile(as(1000), "data", "/in/a.txt", strings.NewReader("hello")); err != nil || w.Path != "/in/a.txt" || w.Size != 5 {
		t.Fatalf("put: %+v %v", w, err)
	}
	if f, _, err := vs.OpenVolumeFile(as(1000), "data", "in/a.txt"); err != nil {
		t.Fatal(err)
	} else if b, _ := io.ReadAll(f); string(b) != "hello" {
		t.Fatalf("read %q", b)
	} else {
		f.Close()
	}
	if _, list, err := vs.OpenVolumeFile(as(1000), "data", "/"); err != nil || list == nil || len(list.Entries) != 1 {
		t.Fatalf("the root: %+v %v", list, err)
	}
	if _, _, err := vs.OpenVolumeFile(as(1002), "data", "/in/a.txt"); !errdefs.IsNotFound(err) {
		t.Fatalf("a stranger's read: %v", err)
	}
	if _, _, err := vs.OpenVolumeFile(as(1000), "data", "/in/../../x"); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("..: %v", err)
	}
	if err := vs.DeleteVolumeFile(as(1000), "data", "/in"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := vs.OpenVolumeFile(as(1000), "data", "/in/a.txt"); !errdefs.IsNotFound(err) {
		t.Fatalf("after the delete: %v", err)
	}

	// Shared: 1001 shares its volume with 1002, who sees and mounts it as
	// "1001/data", and may do nothing more; 1003 sees none.
	if _, err := vs.CreateVolume(as(1001), &api.CreateVolumeRequest{Name: "shared", SizeMB: 16, SharedWith: []uint32{1002, 1002, 1001}}); err != nil {
		t.Fatal(err)
	}
	if v, err := vs.GetVolume(as(1002), "1001/shared"); err != nil || len(v.SharedWith) != 1 || v.SharedWith[0] != 1002 {
		t.Fatalf("a shared volume's get: %+v %v", v, err)
	}
	if list, err := vs.ListVolumes(as(1002)); err != nil || len(list) != 1 || list[0].Name != "shared" {
		t.Fatalf("1002's list: %+v %v", list, err)
	}
	sh, err := d.CreateSession(as(1002), &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "1001/shared", Path: "/shared"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := vs.DeleteVolume(as(1002), "1001/shared"); !errdefs.IsNotFound(err) {
		t.Fatalf("a shared user's delete: %v", err)
	}
	if _, err := vs.PutVolumeFile(as(1002), "1001/shared", "/x", strings.NewReader("x")); !errdefs.IsNotFound(err) {
		t.Fatalf("a shared user's upload: %v", err)
	}
	for _, name := range []string{"1001/shared", "1001/data"} {
		if _, err := d.CreateSession(as(1003), &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: name, Path: "/v"}}}); !errdefs.IsNotFound(err) {
			t.Fatalf("a stranger mounts %s: %v", name, err)
		}
	}
	if err := d.DeleteSession(as(1002), sh.ID); err != nil {
		t.Fatal(err)
	}

	// A restart keeps it, and its session's mount.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	vs = d.State().Volumes
	if v, err := vs.GetVolume(as(1000), "data"); err != nil || len(v.MountedBy) != 1 {
		t.Fatalf("after a restart: %+v %v", v, err)
	}
	if err := d.DeleteSession(as(1000), s.ID); err != nil {
		t.Fatal(err)
	}
	if err := vs.DeleteVolume(as(1000), "data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spec.Volumes[0].Source); !os.IsNotExist(err) {
		t.Fatalf("the volume's folder after its delete: %v", err)
	}
	if _, err := vs.GetVolume(as(1000), "data"); !errdefs.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

// TestVolumeUpdate: the owner changes whom a volume is shared with; a
// user whose session mounts it cannot be left out until that session is
// gone; after, their creates find no such volume; no one else may change
// it.
func TestVolumeUpdate(t *testing.T) {
	t.Parallel()
	d := newEnv(t, nil).start()
	vs := d.State().Volumes
	if _, err := vs.CreateVolume(as(1000), &api.CreateVolumeRequest{Name: "data", SizeMB: 16, SharedWith: []uint32{1001}}); err != nil {
		t.Fatal(err)
	}
	s, err := d.CreateSession(as(1001), &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "1000/data", Path: "/d"}}})
	if err != nil {
		t.Fatal(err)
	}
	update := func(ctx context.Context, uids ...uint32) (*api.Volume, error) {
		if uids == nil {
			uids = []uint32{}
		}
		return vs.UpdateVolume(ctx, "data", &api.UpdateVolumeRequest{SharedWith: &uids})
	}
	if _, err := update(as(1000), 1002); !errdefs.IsConflict(err) {
		t.Fatalf("leaving out a user whose session mounts it: %v", err)
	}
	if v, err := update(as(1000), 1002, 1001, 1000, 1002); err != nil || len(v.SharedWith) != 2 || v.SharedWith[0] != 1001 || v.SharedWith[1] != 1002 {
		t.Fatalf("adding a user: %+v %v", v, err)
	}
	if _, err := vs.GetVolume(as(1002), "1000/data"); err != nil {
		t.Fatalf("the added user's get: %v", err)
	}
	for name, ctx := range map[string]context.Context{"a stranger": as(1003), "a user it is shared with": as(1001)} {
		if _, err := update(ctx); !errdefs.IsNotFound(err) {
			t.Errorf("%s's update: %v", name, err)
		}
	}
	many := make([]uint32, maxSharedWith+1)
	for i := range many {
		many[i] = uint32(2000 + i)
	}
	if _, err := update(as(1000), many...); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("too many users: %v", err)
	}
	if v, err := vs.UpdateVolume(as(1000), "data", &api.UpdateVolumeRequest{}); err != nil || len(v.SharedWith) != 2 {
		t.Fatalf("an update that changes nothing: %+v %v", v, err)
	}
	if err := d.DeleteSession(as(1001), s.ID); err != nil {
		t.Fatal(err)
	}
	if v, err := update(as(1000)); err != nil || len(v.SharedWith) != 0 {
		t.Fatalf("sharing with no one: %+v %v", v, err)
	}
	if _, err := d.CreateSession(as(1001), &api.CreateSessionRequest{Volumes: []api.VolumeMount{{Name: "1000/data", Path: "/d"}}}); !errdefs.IsNotFound(err) {
		t.Fatalf("a mount after the sharing ended: %v", err)
	}
	one := []uint32{1001}
	if v, err := vs.UpdateVolume(root, "1000/data", &api.UpdateVolumeRequest{SharedWith: &one}); err != nil || len(v.SharedWith) != 1 {
		t.Fatalf("root's update, as uid/name: %+v %v", v, err)
	}
}

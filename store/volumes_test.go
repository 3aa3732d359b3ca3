package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestVolumes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"), Options{})
	a := &Volume{VolumeID: "v1", Name: "data", SizeMB: 64, OwnerUID: 1000, CreatedAt: time.Now().UTC()}
	if err := s.CreateVolume(a); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateVolume(&Volume{VolumeID: "v2", Name: "data", OwnerUID: 1000}); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("a second volume of the name: %v", err)
	}
	// Another owner's name is its own.
	if err := s.CreateVolume(&Volume{VolumeID: "v3", Name: "data", OwnerUID: 1001}); err != nil {
		t.Fatal(err)
	}
	vs, err := s.Volumes()
	if err != nil || len(vs) != 2 || vs[0].VolumeID != "v1" || vs[1].VolumeID != "v3" {
		t.Fatalf("volumes: %+v %v", vs, err)
	}
	if err := s.DeleteVolume(1000, "data"); err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.Volumes(); len(vs) != 1 || vs[0].OwnerUID != 1001 {
		t.Fatalf("after the delete: %+v", vs)
	}
}

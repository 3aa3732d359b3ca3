package idmap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// daemonDir makes a data dir naming instance, as a live daemon's.
func daemonDir(t *testing.T, instance string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, InstanceFile), []byte(instance+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLease(t *testing.T) {
	want := Range{Base: 1 << 30, Blocks: 4}
	size := uint32(4 * BlockSize)
	tests := []struct {
		name string
		// others lease before, each with its own data dir; gone ones have
		// had their data dir removed.
		others []Range
		gone   []bool
		move   bool
		want   Range
		err    string
	}{
		{name: "alone", want: want},
		{name: "moved past one", others: []Range{want}, gone: []bool{false}, move: true, want: Range{Base: want.Base + size, Blocks: 4}},
		{name: "moved past two", others: []Range{want, {Base: want.Base + size, Blocks: 1}}, gone: []bool{false, false}, move: true, want: Range{Base: want.Base + 2*size, Blocks: 4}},
		{name: "refused", others: []Range{{Base: want.Base + BlockSize, Blocks: 1}}, gone: []bool{false}, err: "overlaps the range of the sandboxd"},
		{name: "stale lease ignored", others: []Range{want}, gone: []bool{true}, want: want},
		{name: "no overlap", others: []Range{{Base: want.Base + size, Blocks: 2}}, gone: []bool{false}, want: want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, r := range tt.others {
				inst := "other" + string(rune('a'+i))
				dd := daemonDir(t, inst)
				if _, err := Lease(LeaseRequest{Dir: dir, Instance: inst, DataDir: dd, Want: r}); err != nil {
					t.Fatal(err)
				}
				if tt.gone[i] {
					os.RemoveAll(dd)
				}
			}
			got, err := Lease(LeaseRequest{Dir: dir, Instance: "me", DataDir: daemonDir(t, "me"), Want: want, Move: tt.move})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("range = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A daemon that moved keeps its range across restarts, and a released
// lease frees the range for the next.
func TestLeaseKeptAndReleased(t *testing.T) {
	dir := t.TempDir()
	want := Range{Base: 1 << 30, Blocks: 2}
	a, b := daemonDir(t, "a"), daemonDir(t, "b")
	if _, err := Lease(LeaseRequest{Dir: dir, Instance: "a", DataDir: a, Want: want, Move: true}); err != nil {
		t.Fatal(err)
	}
	rb, err := Lease(LeaseRequest{Dir: dir, Instance: "b", DataDir: b, Want: want, Move: true})
	if err != nil || rb == want {
		t.Fatalf("b: %+v %v", rb, err)
	}
	if err := ReleaseLease(dir, "a"); err != nil {
		t.Fatal(err)
	}
	// A lease folder that is gone (a host whose /run was cleared) holds no
	// lease to give back.
	if err := ReleaseLease(filepath.Join(dir, "gone"), "a"); err != nil {
		t.Fatalf("release in a missing folder: %v", err)
	}
	again, err := Lease(LeaseRequest{Dir: dir, Instance: "b", DataDir: b, Want: want, Move: true})
	if err != nil || again != rb {
		t.Fatalf("b again: %+v %v, want its earlier %+v", again, err, rb)
	}
}

package idmap

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestRangeValidate(t *testing.T) {
	for _, tc := range []struct {
		r  Range
		ok bool
	}{
		{Range{Base: 100000000, Blocks: 4096}, true},
		{Range{Base: 65536, Blocks: 1}, true},
		{Range{Base: 1000, Blocks: 1}, false},
		{Range{Base: 100000000, Blocks: 0}, false},
		{Range{Base: 4294000000, Blocks: 100}, false},
	} {
		if err := tc.r.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.r, err)
		}
	}
}

func TestAllocator(t *testing.T) {
	a, err := New(Range{Base: 1 << 20, Blocks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Reserve(1<<20 + BlockSize) {
		t.Fatal("reserve a block of the range")
	}
	for _, bad := range []uint32{1<<20 + BlockSize, 1<<20 + 1, 1 << 19, 1<<20 + 3*BlockSize} {
		if a.Reserve(bad) {
			t.Errorf("reserve %d must fail", bad)
		}
	}
	x, err := a.Allocate()
	if err != nil || x != 1<<20 {
		t.Fatalf("%d %v", x, err)
	}
	y, err := a.Allocate()
	if err != nil || y != 1<<20+2*BlockSize {
		t.Fatalf("skips the reserved block: %d %v", y, err)
	}
	if _, err := a.Allocate(); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("full: %v", err)
	}
	a.Release(x)
	if z, err := a.Allocate(); err != nil || z != x || a.InUse() != 3 {
		t.Fatalf("reuse: %d %v %d", z, err, a.InUse())
	}
}

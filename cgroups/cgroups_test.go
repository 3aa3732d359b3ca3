package cgroups

import (
	"os"
	"testing"
)

func TestResources(t *testing.T) {
	r := Resources(Limits{MemoryBytes: 256 << 20, CPUs: 1.5, Pids: 64})
	if *r.Memory.Limit != 256<<20 || *r.Memory.Swap != 256<<20 {
		t.Fatal("memory and swap must be equal: no swap")
	}
	if *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 {
		t.Fatalf("cpu %d/%d", *r.CPU.Quota, *r.CPU.Period)
	}
	if *r.Pids.Limit != 64 {
		t.Fatal("pids")
	}
	if r := Resources(Limits{}); r.Memory != nil || r.CPU != nil || r.Pids != nil {
		t.Fatal("zero limits set nothing")
	}
}

func TestDetectAndTree(t *testing.T) {
	v := Detect()
	if v != 1 && v != 2 {
		t.Fatalf("version %d", v)
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root")
	}
	tree, err := Setup("sandboxd-unit")
	if err != nil {
		t.Fatal(err)
	}
	if tree.Version != v || tree.PathFor("x") == "" {
		t.Fatalf("tree %+v", tree)
	}
	if err := tree.Remove(); err != nil {
		t.Fatal(err)
	}
}

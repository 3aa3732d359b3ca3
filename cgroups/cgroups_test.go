package cgroups

import (
	"context"
	"log/slog"
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
	tree, err := Setup(context.Background(), "sandboxd-unit", false, slog.Default())
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

func TestScopeFor(t *testing.T) {
	for _, tc := range []struct{ own, scope, slice string }{
		{"/system.slice/sandboxd.service", "sandboxd-sandboxes.scope", "system.slice"},
		{"/machine.slice/sub.slice/sandboxd-b.service", "sandboxd-b-sandboxes.scope", "sub.slice"},
		{"/system.slice/system-sandboxd.slice/sandboxd@x.service", "sandboxd-x-sandboxes.scope", "system-sandboxd.slice"},
		{"/sandboxd.service", "sandboxd-sandboxes.scope", "-.slice"},
		{"/user.slice/user-0.slice/session-1.scope", "", ""},
		{"/", "", ""},
	} {
		scope, slice, err := ScopeFor(tc.own)
		if scope != tc.scope || slice != tc.slice || (err != nil) != (tc.scope == "") {
			t.Errorf("ScopeFor(%q) = %q, %q, %v; want %q, %q", tc.own, scope, slice, err, tc.scope, tc.slice)
		}
	}
}

package isolation

import (
	"reflect"
	"testing"
)

func TestCPUPickerSpreads(t *testing.T) {
	p := &cpuPicker{host: []int{0, 1, 2, 3}, use: map[int]int{}, given: map[string][]int{}}
	steps := []struct {
		id   string
		cpus float64
		want string
	}{
		{"a", 1, "0"},
		{"b", 1, "1"},
		{"c", 1.5, "2,3"},
		{"d", 2, "0,1"},   // every CPU used once: the lowest first
		{"e", 4, ""},      // as many as the host: no cpuset
		{"f", 0.25, "2"},  // 2 and 3 are used once, 0 and 1 twice
		{"a", 3, "0,1,3"}, // a's own CPU 0 is free again before the pick
	}
	for _, s := range steps {
		if got := p.pick(s.id, s.cpus); got != s.want {
			t.Fatalf("pick(%s, %v) = %q, want %q", s.id, s.cpus, got, s.want)
		}
	}
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		p.release(id)
	}
	if len(p.use) != 0 || len(p.given) != 0 {
		t.Fatalf("left after every release: %v %v", p.use, p.given)
	}
	p.adopt("old", "1-2")
	if got := p.pick("new", 2); got != "0,3" {
		t.Fatalf("after adopting 1-2: %q", got)
	}
	if p.all() != "0,1,2,3" {
		t.Fatalf("all: %q", p.all())
	}
}

func TestCPUPickerOff(t *testing.T) {
	p := newCPUPicker(false)
	if got := p.pick("a", 1); got != "" {
		t.Fatalf("no cpuset, yet %q", got)
	}
	if p.all() != "" {
		t.Fatal("no cpuset, yet CPUs")
	}
}

func TestParseCPUs(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "3": {3}, "0-2,5": {0, 1, 2, 5}, "0,x,2-1,4\n": {0, 4}} {
		if got := parseCPUs(in); !reflect.DeepEqual(got, want) {
			t.Errorf("parseCPUs(%q) = %v, want %v", in, got, want)
		}
	}
}

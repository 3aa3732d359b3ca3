package seccomp

import (
	"slices"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// TestGvisorProfile checks the profile runsc gets: pid 1 protected first
// (gVisor takes a call's first matching rule), in the pid's low 32 bits,
// gVisor's own names beside libseccomp's, clone3 allowed unless denied,
// and every other rule as runc's.
func TestGvisorProfile(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        Config
		clone3Open bool
	}{
		{"default", Config{}, true},
		{"clone3 denied", Config{Deny: []string{"clone3"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Profile(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			g, err := GvisorProfile(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			first := g.Syscalls[0]
			if first.Action != specs.ActErrno || !slices.Equal(first.Names, signalsToInit) || len(first.Args) != 1 ||
				first.Args[0] != (specs.LinuxSeccompArg{Index: 0, Value: 0xffffffff, ValueTwo: 1, Op: specs.OpMaskedEqual}) {
				t.Fatalf("the first rule must refuse signals to pid 1: %+v", first)
			}
			if len(g.Syscalls) != len(p.Syscalls)+1 || g.DefaultAction != p.DefaultAction {
				t.Fatalf("%d rules for runsc, %d for runc", len(g.Syscalls), len(p.Syscalls))
			}
			if names := g.Syscalls[1].Names; !slices.Contains(names, "pselect6") || !slices.Contains(names, "pselect") {
				t.Fatal("pselect6 must be allowed by both its names")
			}
			for i, rule := range g.Syscalls[1:] {
				runc := p.Syscalls[i]
				if slices.Equal(rule.Names, []string{"clone3"}) {
					if open := rule.Action == specs.ActAllow; open != c.clone3Open {
						t.Errorf("clone3: %+v", rule)
					}
					continue
				}
				if rule.Action != runc.Action || len(rule.Args) != len(runc.Args) || !slices.Equal(rule.Names[:len(runc.Names)], runc.Names) {
					t.Errorf("rule %d: %+v, runc's %+v", i, rule, runc)
				}
			}
		})
	}
}

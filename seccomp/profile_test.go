package seccomp

import (
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestDefaultProfileDeniesDangerousCalls(t *testing.T) {
	p, err := Profile(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != specs.ActErrno {
		t.Fatalf("default action %s", p.DefaultAction)
	}
	allowed := Allowed(Config{})
	for _, name := range []string{"mount", "umount2", "unshare", "setns", "kexec_load", "bpf", "perf_event_open",
		"userfaultfd", "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "open_by_handle_at",
		"init_module", "finit_module", "delete_module", "pivot_root", "chroot", "reboot", "swapon", "acct", "clone3"} {
		if slices.Contains(allowed, name) {
			t.Errorf("%s must not be allowed", name)
		}
	}
	for _, name := range []string{"read", "write", "execve", "openat", "mmap", "futex", "wait4"} {
		if !slices.Contains(allowed, name) {
			t.Errorf("%s must be allowed", name)
		}
	}
	var clone, clone3 bool
	for _, s := range p.Syscalls {
		if slices.Contains(s.Names, "clone") && len(s.Args) == 1 && s.Args[0].Op == specs.OpMaskedEqual && s.Args[0].Value == nsFlags {
			clone = true
		}
		if slices.Contains(s.Names, "clone3") && s.Action == specs.ActErrno {
			clone3 = true
		}
	}
	if !clone || !clone3 {
		t.Fatalf("clone must be filtered by flags (%v) and clone3 answered ENOSYS (%v)", clone, clone3)
	}
}

func TestOperatorChanges(t *testing.T) {
	got := Allowed(Config{Allow: []string{"ptrace", "read"}, Deny: []string{"read", "write"}})
	if !slices.Contains(got, "ptrace") || slices.Contains(got, "read") || slices.Contains(got, "write") {
		t.Fatal("allow adds, deny removes and wins")
	}
	if _, err := Profile(Config{Allow: []string{"no_such_call"}}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := Profile(Config{Deny: []string{"not_a_call"}}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("unknown name in deny: %v", err)
	}
	if LibraryVersion() == "0.0.0" {
		t.Fatal("libseccomp version")
	}
}

func TestWatched(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		want, not []string
	}{
		{"default", Config{}, []string{"mount", "unshare", "bpf", "ptrace", "keyctl", "init_module"}, []string{"read", "clone3"}},
		{"operator denies", Config{Deny: []string{"socket"}}, []string{"socket", "mount"}, nil},
		{"operator allows", Config{Allow: []string{"ptrace"}}, []string{"mount"}, []string{"ptrace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Watched(tc.cfg)
			for _, n := range tc.want {
				if !slices.Contains(got, n) {
					t.Errorf("%s must be watched", n)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Errorf("%s must not be watched", n)
				}
			}
		})
	}
}

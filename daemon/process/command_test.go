package process

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// TestCheckExecSize: a command the kernel would refuse to exec (E2BIG) is
// a 400 before it starts; one just under each bound passes.
func TestCheckExecSize(t *testing.T) {
	big := func(n int) string { return strings.Repeat("a", n) }
	many := func(n, size int) []string {
		argv := []string{"sh"}
		for range n {
			argv = append(argv, big(size))
		}
		return argv
	}
	limit := execLimit() - execHeadroom
	cases := []struct {
		name string
		argv []string
		env  []string
		ok   bool
	}{
		{"a 3 MB argument", many(1, 3<<20), nil, false},
		{"an argument of 128 KiB", many(1, maxArgStrlen), nil, false},
		{"an argument of 128 KiB less its NUL", many(1, maxArgStrlen-1), nil, true},
		{"a variable of 128 KiB", []string{"sh"}, []string{"V=" + big(maxArgStrlen)}, false},
		{"arguments over the limit together", many(limit/100_000+1, 100_000), nil, false},
		{"arguments under the limit together", many(limit/100_010-1, 100_000), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckExecSize(tc.argv, tc.env)
			if tc.ok != (err == nil) || err != nil && (!errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "E2BIG")) {
				t.Fatalf("CheckExecSize = %v, want ok %v", err, tc.ok)
			}
		})
	}
	if execLimit() < 128<<10 || execLimit() > 6<<20 {
		t.Errorf("execLimit() = %d", execLimit())
	}
}

package network

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestConsistent: an interrupted dump is run again until one is whole, up
// to dumpTries; other errors come back at once.
func TestConsistent(t *testing.T) {
	other := errors.New("netlink: permission denied")
	for _, c := range []struct {
		name        string
		interrupted int // dumps interrupted before a whole one
		err         error
		wantCalls   int
		wantErr     error
	}{
		{"whole at once", 0, nil, 1, nil},
		{"interrupted twice", 2, nil, 3, nil},
		{"always interrupted", 100, nil, dumpTries, netlink.ErrDumpInterrupted},
		{"another error", 0, other, 1, other},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			out, err := Consistent(func() (int, error) {
				calls++
				if calls <= c.interrupted {
					return -1, netlink.ErrDumpInterrupted
				}
				return 42, c.err
			})
			if calls != c.wantCalls || !errors.Is(err, c.wantErr) || (err == nil && out != 42) {
				t.Fatalf("%d calls, %d, %v; want %d calls, %v", calls, out, err, c.wantCalls, c.wantErr)
			}
		})
	}
}

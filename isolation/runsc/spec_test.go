package runsc

import (
	"testing"

	"github.com/sandboxd/sandboxd/isolation"
)

// TestGvisorResources checks the host's room for a runsc sandbox's Sentry.
func TestGvisorResources(t *testing.T) {
	for _, c := range []struct {
		pids int64
		host int64 // 0: no limit
	}{
		{0, 0},
		{32, gvisorPidsBase + 32*gvisorPidsFactor},
		{128, gvisorPidsBase + 128*gvisorPidsFactor},
		{256, gvisorPidsCap},
		{4096, gvisorPidsCap},
	} {
		res := gvisorResources(isolation.Limits{MemoryBytes: 1 << 28, Pids: c.pids})
		var got int64
		if res.Pids != nil && res.Pids.Limit != nil {
			got = *res.Pids.Limit
		}
		if got != c.host {
			t.Errorf("pids %d: host limit %d, want %d", c.pids, got, c.host)
		}
		if want := int64(1<<28 + 96<<20); res.Memory == nil || *res.Memory.Limit != want || *res.Memory.Swap != want {
			t.Errorf("pids %d: memory %+v, want %d with its room", c.pids, res.Memory, want)
		}
	}
}

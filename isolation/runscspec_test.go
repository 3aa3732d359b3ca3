package isolation

import "testing"

// TestGvisorResources checks the host's pids room for a runsc sandbox.
func TestGvisorResources(t *testing.T) {
	for _, c := range []struct {
		pids int64
		host int64 // 0: no limit
	}{
		{0, 0},
		{32, gvisorPidsBase + 32*gvisorPidsFactor},
		{256, gvisorPidsBase + 256*gvisorPidsFactor},
		{4096, gvisorPidsCap},
	} {
		res := Limits{MemoryBytes: 1 << 28, Pids: c.pids}.gvisorResources()
		var got int64
		if res.Pids != nil && res.Pids.Limit != nil {
			got = *res.Pids.Limit
		}
		if got != c.host {
			t.Errorf("pids %d: host limit %d, want %d", c.pids, got, c.host)
		}
		if res.Memory == nil || *res.Memory.Limit != 1<<28 {
			t.Errorf("pids %d: memory %+v", c.pids, res.Memory)
		}
	}
}

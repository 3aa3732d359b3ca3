package runsc

import (
	"testing"
	"time"
)

// TestMarker walks a runsc sandbox's memory readings through the kills
// they call for.
func TestMarker(t *testing.T) {
	const mib = 1 << 20
	t0 := time.Unix(1000, 0)
	m := marker{limit: 128 * mib}
	for i, step := range []struct {
		n    int64
		at   time.Duration
		kill bool
	}{
		{20 * mib, 0, false},                                   // below the limit
		{129 * mib, 10 * time.Millisecond, true},               // reached: kill
		{135 * mib, 20 * time.Millisecond, false},              // the dying process's last pages
		{130 * mib, 500 * time.Millisecond, false},             // being handed back
		{150 * mib, 600 * time.Millisecond, true},              // grew past the kill's: another bomb
		{150 * mib, time.Second, false},                        // still there, within the pause
		{150 * mib, 4 * time.Second, true},                     // still there after it, not shrinking: kill again
		{140 * mib, 7 * time.Second, false},                    // shrinking after the pause
		{60 * mib, 8 * time.Second, false},                     // freed
		{129 * mib, 8*time.Second + 10*time.Millisecond, true}, // a new crossing is new memory
	} {
		if got := m.reached(step.n, t0.Add(step.at)); got != step.kill {
			t.Errorf("step %d (%d MiB at %v): kill %v, want %v", i, step.n/mib, step.at, got, step.kill)
		}
	}
}

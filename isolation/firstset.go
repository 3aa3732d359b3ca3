package isolation

import (
	"sync"
	"sync/atomic"
)

// opencontainers/cgroups' v1 manager detects the blkio controller's file
// names on the first limits it sets, into a value all sandboxes share,
// without a lock: sandboxes starting at once race on it (harmless, the
// same names are written, but a data race). Until one sandbox has set its
// limits, starts and limit changes run one at a time; after, freely.
var (
	limitsSetOnce atomic.Bool
	firstLimits   sync.Mutex
)

// LimitsGate is held around anything that sets cgroup limits (a start by
// either engine, a limits change); done says whether limits were set,
// which opens the gate for good.
func LimitsGate() (release func(done bool)) {
	if limitsSetOnce.Load() {
		return func(bool) {}
	}
	firstLimits.Lock()
	return func(done bool) {
		if done {
			limitsSetOnce.Store(true)
		}
		firstLimits.Unlock()
	}
}

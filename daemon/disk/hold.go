package disk

import (
	"context"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// Hold promises size bytes to id, a folder about to be written whole (a
// snapshot), if the data dir has them free above its floor now: real
// bytes, not a sparse disk's promise, so disk_overcommit does not stretch
// them. The promise lasts until release, called when the folder is
// written (its bytes are then the data dir's, counted by what is free) or
// was given up; others' promises meanwhile count it.
func (a *Admission) Hold(ctx context.Context, id string, size int64) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.budgetLocked()
	if err != nil {
		return nil, err
	}
	// Sessions' sparse disks may be promised past what is free
	// (disk_overcommit): only the other folders being written count.
	var writing int64
	for _, p := range a.promised {
		if p.held {
			writing += p.size
		}
	}
	if b.free-b.floor-writing < size {
		logging.From(ctx).Info("disk refused: the data dir cannot hold it", "id", id, "mb", mib(size), "budget", b.String())
		return nil, api.WithRetryAfter(api.Errorf(errdefs.ErrResourceExhausted,
			"the data dir has %d MiB free, and %d MiB do not fit above its %d MiB floor (data_dir_min_free_mb) beside what is being written: delete snapshots or sessions, or free space on the host",
			mib(b.free), mib(size), mib(b.floor)), RetryAfter)
	}
	a.promised[id] = promise{size: size, held: true}
	return func() { a.Forget(id) }, nil
}

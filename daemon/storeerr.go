package daemon

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/disk"
)

// recordErr is the client's error for a state write that failed: the
// database on a full data dir is the caller's 429 with a sentence saying
// so (space comes back when sessions go), anything else an internal
// error. Every write of a session's state answers its request this way,
// never only a log line.
func recordErr(id string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return api.WithRetryAfter(api.Errorf(errdefs.ErrResourceExhausted,
			"session %s could not be recorded: the data dir is full; delete sessions or free space on the host", id), disk.RetryAfter)
	}
	return fmt.Errorf("record session %s: %w", id, err)
}

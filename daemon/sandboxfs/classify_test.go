package sandboxfs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// TestClassify checks each error a path operation meets becomes the API
// error a client can act on, naming the path.
func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		is   func(error) bool
		says string
	}{
		{unix.ENOENT, errdefs.IsNotFound, "no such file"},
		{unix.EXDEV, errdefs.IsInvalidArgument, "symlink"},
		{unix.ELOOP, errdefs.IsInvalidArgument, "symlink loop"},
		{unix.EEXIST, errdefs.IsInvalidArgument, "in the way"},
		{unix.ENOTEMPTY, errdefs.IsInvalidArgument, "in the way"},
		{unix.ENOTDIR, errdefs.IsInvalidArgument, "not a folder"},
		{unix.EISDIR, errdefs.IsInvalidArgument, "is a folder"},
		{unix.ENAMETOOLONG, errdefs.IsInvalidArgument, "too long"},
		{unix.ENOSPC, errdefs.IsResourceExhausted, "disk quota"},
		{unix.EDQUOT, errdefs.IsResourceExhausted, "disk quota"},
		{unix.EROFS, errdefs.IsConflict, "read-only"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			err := classify(Workspace, "a/b", fmt.Errorf("open: %w", tt.err))
			if !tt.is(err) || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "/workspace/a/b") {
				t.Errorf("classify(%v) = %v", tt.err, err)
			}
		})
	}
	if err := classify(Workspace, "x", unix.EIO); errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "/workspace/x") {
		t.Errorf("classify(EIO) = %v", err)
	}
}

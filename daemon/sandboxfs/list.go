package sandboxfs

import (
	"fmt"
	"os"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
)

// Bounds of a listing deeper than one level: a tree can be any size, an
// answer cannot.
const (
	// MaxDepth is the deepest listing.
	MaxDepth = 16
	// MaxEntries is the most entries a listing of depth > 1 answers; a
	// bigger tree is refused (payload too large), not cut silently.
	MaxEntries = 10000
)

// CheckDepth checks a listing's depth.
func CheckDepth(depth int) error {
	if depth < 1 || depth > MaxDepth {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad depth %d: give 1 (the folder's own entries) to %d", depth, MaxDepth)
	}
	return nil
}

// ListDepth lists a folder opened with Open and, to depth levels, the
// folders in it (symlinks are listed, never followed). Each entry has its
// whole path (dir's path is base). Depth 1 is List with paths.
func ListDepth(dir *os.File, base string, depth, max int) (*api.FileList, error) {
	out := &api.FileList{Entries: []api.FileInfo{}}
	if err := listInto(out, dir, base, depth, max); err != nil {
		return nil, err
	}
	return out, nil
}

func listInto(out *api.FileList, dir *os.File, base string, depth, max int) error {
	list, err := List(dir)
	if err != nil {
		return err
	}
	if len(out.Entries)+len(list.Entries) > max {
		return api.ErrPayloadTooLarge.WithMessage(fmt.Sprintf("the listing has more than %d entries: list a smaller depth, or a folder further down", max))
	}
	for _, e := range list.Entries {
		e.Path = base + "/" + e.Name
		out.Entries = append(out.Entries, e)
		if e.Type != "dir" || depth <= 1 {
			continue
		}
		fd, err := openBeneath(int(dir.Fd()), e.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue // gone, or swapped for a symlink, since the listing
		}
		sub := os.NewFile(uintptr(fd), e.Path)
		err = listInto(out, sub, e.Path, depth-1, max)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

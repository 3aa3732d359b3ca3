package volume

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// plainUsage adds up the blocks under dir, without following symlinks:
// what a quota would count, for folders that have none.
func plainUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n
}

package daemon

import (
	"io/fs"
	"syscall"
)

// blocks is the space a file takes on disk, which is what a quota counts.
func blocks(fi fs.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Blocks * 512, true
}

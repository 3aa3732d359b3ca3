package isolation

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ensureOwner makes dir and everything in it owned by uid:gid, when dir is
// not already: a workspace moves to new host ids when the daemon's user
// namespace setting or id range changed since it was made. Symlinks are
// changed themselves, never followed.
func ensureOwner(dir string, uid, gid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

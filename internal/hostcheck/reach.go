package hostcheck

import (
	"fmt"
	"os"
	"path/filepath"
)

// Sandboxes run as ids that own nothing on the host (a user namespace's
// block, or sandbox_uid): runc's init prepares a sandbox's root under the
// run dir with those ids, and sessions' disks are mounted from the data
// dir. Every folder on the way must let others search it (o+x), or the
// start fails deep inside runc with "permission denied". mktemp -d and a
// host with umask 077 make such folders.

// Unreachable says which folder on the way to dir (dir itself included)
// others may not search, as one sentence that names it and the fix; "" if
// none. A folder that does not exist yet is not checked (the daemon makes
// it, searchable).
func Unreachable(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	var blocked string
	var mode os.FileMode
	for p := abs; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() && fi.Mode().Perm()&0o001 == 0 {
			blocked, mode = p, fi.Mode().Perm() // the one nearest the root wins
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	if blocked == "" {
		return ""
	}
	return fmt.Sprintf("sandboxes cannot reach %s: %s is mode %04o, which other users may not enter; run chmod o+x %s (or choose a folder under one they can enter)", abs, blocked, mode, blocked)
}

// Folders checks that sandboxes can reach the daemon's data dir and run
// dir.
func (h Host) Folders() Result {
	r := Result{Name: "folders", Status: OK}
	for _, d := range []string{h.DataDir, h.RunDir} {
		if d == "" {
			continue
		}
		if why := Unreachable(d); why != "" {
			r.Status, r.Detail = Fail, why
			return r
		}
	}
	r.Detail = fmt.Sprintf("sandboxes can reach %s and %s", h.DataDir, h.RunDir)
	return r
}

package daemon

import (
	"log/slog"
	"path/filepath"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/isolation/lxcfs"
)

// procView is the lxcfs whose files sandboxes see over their /proc
// (isolation/procview.go): the system's at lxcfs_dir where one serves
// there, else, where lxcfs is installed, the daemon's own under its state
// dir (package lxcfs, Own).
type procView struct {
	// dir is where sandboxes bind lxcfs files from ("": nowhere).
	dir string
	// own is the daemon's own lxcfs; nil when the system's serves, or none.
	own *lxcfs.Own
	// source says which lxcfs serves: api.ProcViewSystem or
	// api.ProcViewDaemon; "" none, for the reason problem says.
	source  string
	problem string
}

// openProcView finds the lxcfs sandboxes get: the system's at lxcfs_dir,
// or one the daemon starts in stateDir/lxcfs when lxcfs is installed and
// nothing serves there. Without either, sandboxes show the host's files
// (newDaemon warns).
func openProcView(cfg config.Config, stateDir string, log *slog.Logger) procView {
	if cfg.LXCFSDir == "" {
		return procView{problem: "turned off (lxcfs_dir = \"\")"}
	}
	if _, err := lxcfs.Serving(cfg.LXCFSDir); err == nil {
		log.Info("lxcfs: the system's serves sandboxes", "lxcfs_dir", cfg.LXCFSDir)
		return procView{dir: cfg.LXCFSDir, source: api.ProcViewSystem}
	}
	bin := lxcfs.Binary()
	if bin == "" {
		return procView{dir: cfg.LXCFSDir, problem: "lxcfs is not installed"}
	}
	own, err := lxcfs.StartOwn(filepath.Join(stateDir, "lxcfs"), bin, log)
	if err != nil {
		log.Warn("lxcfs: nothing serves lxcfs_dir and the daemon cannot start its own", "lxcfs_dir", cfg.LXCFSDir, "err", err)
		return procView{dir: cfg.LXCFSDir, problem: "lxcfs does not serve and the daemon could not start its own (see its log)"}
	}
	return procView{dir: own.Dir(), own: own, source: api.ProcViewDaemon}
}

// info is what GET /v1/info says of it; serving is whether the lxcfs
// answers now (the daemon's own may be between a death and its restart).
func (p procView) info(serving bool) api.ProcViewInfo {
	switch {
	case p.source == "":
		return api.ProcViewInfo{ServedBy: api.ProcViewNone, Problem: p.problem}
	case !serving:
		return api.ProcViewInfo{ServedBy: api.ProcViewNone, Problem: "the " + p.source + "'s lxcfs does not answer now"}
	}
	return api.ProcViewInfo{ServedBy: p.source}
}

// close stops the daemon's own lxcfs, unless keep: sandboxes left running
// bind its files, which would fail to read without it.
func (p procView) close(keep bool) error {
	if p.own == nil {
		return nil
	}
	return p.own.Close(keep)
}

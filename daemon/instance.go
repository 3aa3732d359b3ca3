package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxd/sandboxd/cgroups"
	"github.com/sandboxd/sandboxd/isolation/idmap"
)

// instance is which daemon this is among the daemons of a host: an id
// kept in the data dir (idmap.InstanceFile), made at its first start. It
// names what the daemon makes outside its data dir — its cgroup folder,
// its state folder under the run dir, its id range lease — so that two
// daemons (a packaged one and a user's, tests in parallel) never see, let
// alone sweep, each other's sandboxes.
type instance struct {
	id string
	// legacy marks a data dir made before instance ids: its sandboxes
	// live where they always did (cgroup "sandboxd" or "sandboxes",
	// <run-dir>/state), so that an upgraded daemon finds them.
	legacy bool
}

const legacyPrefix = "legacy-"

// loadInstance reads the data dir's instance id, or makes one.
func loadInstance(dataDir string) (instance, error) {
	path := filepath.Join(dataDir, idmap.InstanceFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if id == "" || strings.ContainsAny(id, "/. ") {
			return instance{}, fmt.Errorf("%s holds no valid instance id: remove it, with no sandbox running, to make a new one", path)
		}
		return instance{id: id, legacy: strings.HasPrefix(id, legacyPrefix)}, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return instance{}, err
	}
	id := newID()
	// A database without an instance file is a daemon's from before.
	if _, err := os.Stat(filepath.Join(dataDir, "sandboxd.db")); err == nil {
		id = legacyPrefix + id
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return instance{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return instance{}, err
	}
	return instance{id: id, legacy: strings.HasPrefix(id, legacyPrefix)}, nil
}

// cgroupName is the daemon's sandbox folder below its own cgroup.
func (i instance) cgroupName(v cgroups.Version) string {
	switch {
	case !i.legacy:
		return "sandboxd-" + i.id
	case v == 2:
		return "sandboxes"
	default:
		return "sandboxd"
	}
}

// stateDir is the daemon's folder under the run dir: libcontainer's
// state, sandbox roots, agent sockets.
func (i instance) stateDir(runDir string) string {
	if i.legacy {
		return filepath.Join(runDir, "state")
	}
	return filepath.Join(runDir, "state-"+i.id)
}

package runc

import (
	"reflect"
	"sync"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
)

// The libcontainer config of a runc sandbox, made from its OCI spec.

// specconvMu serialises specconv.CreateLibcontainerConfig: its config's
// device list points at the package's shared AllowedDevices, and with a
// user namespace it writes each sandbox's root uid into them. Under the lock
// the devices are copied, so no sandbox shares them afterwards.
var specconvMu sync.Mutex

func libcontainerConfig(opts *specconv.CreateOpts) (*configs.Config, error) {
	specconvMu.Lock()
	defer specconvMu.Unlock()
	cfg, err := specconv.CreateLibcontainerConfig(opts)
	if err != nil {
		return nil, err
	}
	for i, d := range cfg.Devices {
		c := *d
		cfg.Devices[i] = &c
	}
	// The seccomp profile is the runtime's, the same for every sandbox
	// but for its notify listener's metadata (the sandbox's id), and a
	// container keeps its config for its life: ~30 KB each, 30 MB of the
	// daemon's heap over a thousand idle sessions. Equal ones share their
	// rules (libcontainer only reads them).
	if s := cfg.Seccomp; s != nil {
		same := sharedSeccomp != nil
		if same {
			c := *s
			c.ListenerMetadata = sharedSeccomp.ListenerMetadata
			same = reflect.DeepEqual(sharedSeccomp, &c)
		}
		if same {
			c := *sharedSeccomp
			c.ListenerMetadata = s.ListenerMetadata
			cfg.Seccomp = &c
		} else {
			sharedSeccomp = s
		}
	}
	return cfg, nil
}

// sharedSeccomp is the last seccomp config made, guarded by specconvMu.
var sharedSeccomp *configs.Seccomp

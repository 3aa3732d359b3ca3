package main

import (
	"errors"

	"github.com/sandboxd/sandboxd/internal/hostcheck"
	"github.com/sandboxd/sandboxd/isolation/lxcfs"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// hostProbes answer doctor's questions with the runtime's own code, the
// code the daemon runs: how it finds mkfs.ext4 and tells a live lxcfs.
func hostProbes() hostcheck.Probes {
	return hostcheck.Probes{
		Mkfs: volume.FindMkfs,
		LXCFS: func(dir string) (bool, error) {
			_, err := lxcfs.Serving(dir)
			return errors.Is(err, lxcfs.ErrNotAnswering), err
		},
	}
}

package disk

import "github.com/sandboxd/sandboxd/isolation/volume"

// Probe is what admission asks of the host's disk: package volume answers
// for real, a unit test's fake for a host it makes up.
type Probe interface {
	// Free is what dir's filesystem has left for the daemon.
	Free(dir string) (int64, error)
	// Allocated is what the session folder's image takes on the host now.
	Allocated(sessionDir string) int64
	// Exists reports whether the session folder's filesystem was made.
	Exists(sessionDir string) bool
	// Writable says why the session's filesystem takes no writes, nil if
	// it does.
	Writable(sessionDir string) error
}

// volumeProbe is the host's disk, through package volume.
type volumeProbe struct{ kind volume.Kind }

func (p volumeProbe) Free(dir string) (int64, error) { return volume.Free(dir) }
func (p volumeProbe) Allocated(dir string) int64     { return volume.Allocated(p.kind, dir) }
func (p volumeProbe) Exists(dir string) bool         { return volume.Exists(p.kind, dir) }
func (p volumeProbe) Writable(dir string) error      { return volume.CheckWritable(p.kind, dir) }

var _ Probe = volumeProbe{}

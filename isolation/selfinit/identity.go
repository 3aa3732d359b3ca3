package selfinit

import (
	"runtime/debug"

	"github.com/sandboxd/sandboxd/internal/version"
)

// VersionArg asks sandboxd-init for its Identity.
const VersionArg = "--version"

// Identity names the build of the binary that calls it, as far as a
// container's init goes: sandboxd's version and the runc module whose
// libcontainer speaks to its init. A daemon hands its sandboxes' init
// over to a sandboxd-init only when the two say the same (the parent and
// the init of a start are one libcontainer's two halves).
func Identity() string {
	runc := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/opencontainers/runc" {
				runc = m.Version
				if m.Replace != nil {
					runc += "=>" + m.Replace.Path + "@" + m.Replace.Version
				}
			}
		}
	}
	return version.Version + " runc " + runc
}

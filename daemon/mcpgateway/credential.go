package mcpgateway

import (
	"os"
	"syscall"

	"github.com/sandboxd/sandboxd/daemon/config"
)

// DefaultUID and DefaultGID are who a command server runs as when its
// config names no user and the daemon is root: 65534, nobody and nogroup
// on Debian and Red Hat (and the kernel's overflow id). A server's tools
// are called for code in sandboxes, so it must not hold the daemon's root
// powers unless the host says so (user = "root"). The packages make no
// user of their own (only the sandboxd group, which may use the daemon's
// socket: a server in it could steer sessions), hence nobody.
const (
	DefaultUID = 65534
	DefaultGID = 65534
)

// credential is who the server's command runs as: its user, else
// DefaultUID when the daemon is root; nil (the daemon's own user, which
// cannot switch) when the daemon is not root and the config names no
// user.
func credential(s config.MCPServer) (*syscall.Credential, error) {
	switch {
	case s.User != "":
		uid, gid, err := s.LookupUser()
		if err != nil {
			return nil, err
		}
		return &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}, nil
	case os.Geteuid() == 0:
		return &syscall.Credential{Uid: DefaultUID, Gid: DefaultGID, Groups: []uint32{}}, nil
	}
	return nil, nil
}

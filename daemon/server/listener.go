package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// maxSocketPath is what fits in sockaddr_un.sun_path with its NUL.
const maxSocketPath = 107

// Listen makes the API socket at path: mode 0660, group group when that
// group exists. A socket another daemon still serves is never taken over:
// it is dialled before anything is unlinked.
func Listen(path, group string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, longer than the %d a Unix socket allows", path, len(path), maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: remove it or choose another --socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another sandboxd is already serving %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return nil, err
	}
	if group != "" {
		g, err := user.LookupGroup(group)
		var unknown user.UnknownGroupError
		switch {
		case errors.As(err, &unknown):
			// No such group: root alone reaches the socket.
		case err != nil:
			l.Close()
			return nil, err
		default:
			gid, _ := strconv.Atoi(g.Gid)
			if err := os.Chown(path, 0, gid); err != nil {
				l.Close()
				return nil, err
			}
		}
	}
	return l, nil
}

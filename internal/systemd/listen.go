package systemd

import (
	"fmt"
	"net"

	"github.com/coreos/go-systemd/v22/activation"
)

// Listener is the API socket systemd passed (sandboxd.socket), or nil when
// the daemon was not socket-activated. The LISTEN_* variables are removed
// from the environment, so nothing the daemon starts inherits them.
func Listener() (net.Listener, error) {
	ls, err := activation.Listeners()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	var found net.Listener
	for _, l := range ls {
		if _, ok := l.(*net.UnixListener); ok && found == nil {
			found = l
		} else if l != nil {
			l.Close()
		}
	}
	if len(ls) > 0 && found == nil {
		return nil, fmt.Errorf("socket activation passed %d sockets and no Unix stream socket: check sandboxd.socket", len(ls))
	}
	return found, nil
}

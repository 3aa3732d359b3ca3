package client

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// HostEnv names the environment variable of a daemon to reach (NewHost),
// as docker's DOCKER_HOST.
const HostEnv = "SANDBOXD_HOST"

// SSHEnv and SSHRemoteEnv name the ssh command (default "ssh", split at
// spaces: "ssh -F ./config") and the far side's sandboxctl (default
// "sandboxctl", found on the far user's PATH).
const (
	SSHEnv       = "SANDBOXD_SSH"
	SSHRemoteEnv = "SANDBOXD_SSH_REMOTE_COMMAND"
)

// NewHost returns a client of the daemon host names: "unix:///path/to.sock"
// (or a bare path), or "ssh://[user@]host[:port][/path/to.sock]", which
// reaches the daemon on another machine as docker does: ssh runs
// `sandboxctl dial-stdio` there, as the far user (with that user's rights
// on the daemon), and the connection is its standard input and output. The
// path is the far daemon's socket (default: the far sandboxctl's).
func NewHost(host string) (*Client, error) {
	if !strings.Contains(host, "://") {
		return New(host), nil
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("bad host %q: %w", host, err)
	}
	if u.Scheme == "unix" {
		return New(u.Path), nil
	}
	name, argv, err := sshCommand(u, host)
	if err != nil {
		return nil, err
	}
	return NewDialer(name, func(ctx context.Context) (net.Conn, error) {
		return dialCommand(ctx, name, argv)
	}), nil
}

// sshCommand is the ssh command line that reaches the daemon of ssh URL u
// (host as given), and the name it goes by.
func sshCommand(u *url.URL, host string) (string, []string, error) {
	if u.Scheme != "ssh" {
		return "", nil, fmt.Errorf("bad host %q: use unix:///path/to.sock or ssh://[user@]host[:port][/path/to.sock]", host)
	}
	if u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" || (u.User != nil && u.User.Username() == "") || strings.HasPrefix(u.Hostname(), "-") {
		return "", nil, fmt.Errorf("bad host %q: use ssh://[user@]host[:port][/path/to.sock]", host)
	}
	if _, hasPass := u.User.Password(); hasPass {
		return "", nil, fmt.Errorf("bad host %q: ssh hosts take no password (use keys or ssh's own prompt)", host)
	}
	argv := strings.Fields(os.Getenv(SSHEnv))
	if len(argv) == 0 {
		argv = []string{"ssh"}
	}
	// BatchMode: never a prompt that would read the API's bytes.
	argv = append(argv, "-o", "BatchMode=yes", "-T")
	if u.User != nil {
		argv = append(argv, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		argv = append(argv, "-p", p)
	}
	remote := os.Getenv(SSHRemoteEnv)
	if remote == "" {
		remote = "sandboxctl"
	}
	// ssh passes the remote command to the far user's shell: the words go
	// quoted.
	cmd := []string{shellWord(remote)}
	if u.Path != "" && u.Path != "/" {
		cmd = append(cmd, "--socket", shellWord(u.Path))
	}
	cmd = append(cmd, "dial-stdio")
	argv = append(argv, "--", u.Hostname(), strings.Join(cmd, " "))
	name := "ssh://" + u.Host + u.Path
	if u.User != nil {
		name = "ssh://" + u.User.Username() + "@" + u.Host + u.Path
	}
	return name, argv, nil
}

// shellWord is s quoted for a POSIX shell.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
